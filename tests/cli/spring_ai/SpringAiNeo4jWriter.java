// Writes conversations with Spring AI's own Neo4jChatMemoryRepository, for the importer tests.
// Usage: java -cp 'lib/*' SpringAiNeo4jWriter.java BOLT_URL USER PASSWORD LABEL_PREFIX CONVERSATION_ID...
// Labels are LABEL_PREFIX + Spring AI's default ones (its constants: Session, Message, Metadata,
// ToolCall, ToolResponse, Media), so the test also checks the reader's default labels. Each conversation is written through MessageWindowChatMemory in two turns,
// so the second turn reads the first back and saves the whole conversation again, as applications do.
import java.net.URI;
import java.util.List;
import java.util.Map;

import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.GraphDatabase;

import org.springframework.ai.chat.memory.MessageWindowChatMemory;
import org.springframework.ai.chat.memory.repository.neo4j.Neo4jChatMemoryRepository;
import org.springframework.ai.chat.memory.repository.neo4j.Neo4jChatMemoryRepositoryConfig;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.messages.SystemMessage;
import org.springframework.ai.chat.messages.ToolResponseMessage;
import org.springframework.ai.chat.messages.UserMessage;
import org.springframework.ai.content.Media;
import org.springframework.util.MimeTypeUtils;

public class SpringAiNeo4jWriter {
    public static void main(String[] args) {
        var auth = args[1].isEmpty() ? AuthTokens.none() : AuthTokens.basic(args[1], args[2]);
        String prefix = args[3];
        try (var driver = GraphDatabase.driver(args[0], auth)) {
            var repository = new Neo4jChatMemoryRepository(Neo4jChatMemoryRepositoryConfig.builder()
                    .withDriver(driver)
                    .withSessionLabel(prefix + Neo4jChatMemoryRepositoryConfig.DEFAULT_SESSION_LABEL)
                    .withMessageLabel(prefix + Neo4jChatMemoryRepositoryConfig.DEFAULT_MESSAGE_LABEL)
                    .withMetadataLabel(prefix + Neo4jChatMemoryRepositoryConfig.DEFAULT_METADATA_LABEL)
                    .withToolCallLabel(prefix + Neo4jChatMemoryRepositoryConfig.DEFAULT_TOOL_CALL_LABEL)
                    .withToolResponseLabel(prefix + Neo4jChatMemoryRepositoryConfig.DEFAULT_TOOL_RESPONSE_LABEL)
                    .withMediaLabel(prefix + Neo4jChatMemoryRepositoryConfig.DEFAULT_MEDIA_LABEL)
                    .build());
            var memory = MessageWindowChatMemory.builder().chatMemoryRepository(repository).build();
            for (int i = 4; i < args.length; i++) {
                String id = args[i];
                memory.add(id, List.of(
                        new SystemMessage("Be brief."),
                        UserMessage.builder()
                                // "Ünïcødé ☔ 日本語 🌧" as escapes: the source file's encoding is not ours to pick.
                                .text("Weather in Oslo, " + id + "? \u00dcn\u00efc\u00f8d\u00e9 \u2614 \u65e5\u672c\u8a9e \ud83c\udf27")
                                .metadata(Map.of("channel", "web", "attempt", 2))
                                .media(
                                        Media.builder().mimeType(MimeTypeUtils.IMAGE_PNG)
                                                .data(new byte[] {(byte) 0x89, 'P', 'N', 'G', 0, (byte) 0xff})
                                                .name("dot.png").build(),
                                        Media.builder().mimeType(MimeTypeUtils.IMAGE_JPEG)
                                                .data(URI.create("https://example.com/oslo.jpg"))
                                                .name("oslo.jpg").build())
                                .build()));
                memory.add(id, List.of(
                        AssistantMessage.builder().content("").toolCalls(List.of(
                                new AssistantMessage.ToolCall("c1", "function", "weather", "{\"city\":\"Oslo\"}"),
                                new AssistantMessage.ToolCall("c2", "function", "time", "{}"))).build(),
                        ToolResponseMessage.builder().responses(List.of(
                                new ToolResponseMessage.ToolResponse("c1", "weather", "sunny"),
                                new ToolResponseMessage.ToolResponse("c2", "time", "12:00"))).build(),
                        AssistantMessage.builder().content("Sunny at noon. \u2600")
                                .properties(Map.of("finishReason", "STOP")).build()));
            }
        }
    }
}
