// Writes conversations with Spring AI's own CassandraChatMemoryRepository, for the importer tests.
// Usage: java -cp 'lib/*' SpringAiCassandraWriter.java HOST PORT DATACENTER KEYSPACE_PREFIX CONVERSATION_ID...
// The keyspace is KEYSPACE_PREFIX + Spring AI's default one, the table Spring AI's default one.
// Each conversation is written the way an application writes it: through MessageWindowChatMemory,
// in two turns, so the table holds two rows (snapshots) for it and the newer one is the conversation.
import java.net.InetSocketAddress;
import java.util.List;

import com.datastax.oss.driver.api.core.CqlSession;

import org.springframework.ai.chat.memory.MessageWindowChatMemory;
import org.springframework.ai.chat.memory.repository.cassandra.CassandraChatMemoryRepository;
import org.springframework.ai.chat.memory.repository.cassandra.CassandraChatMemoryRepositoryConfig;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.messages.SystemMessage;
import org.springframework.ai.chat.messages.ToolResponseMessage;
import org.springframework.ai.chat.messages.UserMessage;

public class SpringAiCassandraWriter {
    public static void main(String[] args) throws Exception {
        try (CqlSession session = CqlSession.builder()
                .addContactPoint(new InetSocketAddress(args[0], Integer.parseInt(args[1])))
                .withLocalDatacenter(args[2])
                .build()) {
            String keyspace = args[3] + CassandraChatMemoryRepositoryConfig.DEFAULT_KEYSPACE_NAME;
            var config = CassandraChatMemoryRepositoryConfig.builder()
                    .withCqlSession(session)
                    .withKeyspaceName(keyspace);
            boolean created = session.getMetadata().getKeyspace(keyspace)
                    .flatMap(found -> found.getTable(CassandraChatMemoryRepositoryConfig.DEFAULT_TABLE_NAME))
                    .isPresent();
            if (created) {
                // Spring AI made the schema on an earlier run; creating it again would only wait
                // ten seconds for a schema agreement that a one-node test server reports late.
                config.disallowSchemaChanges();
            }
            var repository = CassandraChatMemoryRepository.create(config.build());
            var memory = MessageWindowChatMemory.builder().chatMemoryRepository(repository).build();
            for (int i = 4; i < args.length; i++) {
                String id = args[i];
                memory.add(id, List.of(
                        new SystemMessage("Be brief."),
                        // "Ünïcødé ☔ 日本語 🌧" written as escapes: the source file's encoding is not ours to pick.
                        new UserMessage("Weather in Oslo, " + id + "? \u00dcn\u00efc\u00f8d\u00e9 \u2614 \u65e5\u672c\u8a9e \ud83c\udf27")));
                Thread.sleep(5); // a new snapshot row, not the same clustering key
                memory.add(id, List.of(
                        AssistantMessage.builder().content("").toolCalls(List.of(
                                new AssistantMessage.ToolCall("c1", "function", "weather", "{\"city\":\"Oslo\"}"))).build(),
                        ToolResponseMessage.builder().responses(List.of(
                                new ToolResponseMessage.ToolResponse("c1", "weather", "sunny"))).build(),
                        new AssistantMessage("Sunny. \u2600")));
            }
        }
    }
}
