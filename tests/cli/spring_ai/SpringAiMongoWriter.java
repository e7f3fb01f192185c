// Writes conversations with Spring AI's own MongoChatMemoryRepository, for the importer tests.
// Usage: java -cp 'lib/*' SpringAiMongoWriter.java MONGODB_URL DATABASE CONVERSATION_ID...
// One saveAll per conversation: Spring AI 1.1's Mongo repository reads a conversation back newest
// first and cannot read TOOL messages at all, so a second turn through MessageWindowChatMemory would
// reorder or fail; one saveAll is what its first turn writes.
import java.util.List;
import java.util.Map;

import com.mongodb.client.MongoClients;

import org.springframework.ai.chat.memory.repository.mongo.MongoChatMemoryRepository;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.messages.SystemMessage;
import org.springframework.ai.chat.messages.ToolResponseMessage;
import org.springframework.ai.chat.messages.UserMessage;
import org.springframework.data.mongodb.core.MongoTemplate;

public class SpringAiMongoWriter {
    public static void main(String[] args) {
        try (var client = MongoClients.create(args[0])) {
            var repository = MongoChatMemoryRepository.builder()
                    .mongoTemplate(new MongoTemplate(client, args[1]))
                    .build();
            for (int i = 2; i < args.length; i++) {
                String id = args[i];
                repository.saveAll(id, List.of(
                        new SystemMessage("Be brief."),
                        UserMessage.builder()
                                // "Ünïcødé ☔ 日本語 🌧" as escapes: the source file's encoding is not ours to pick.
                                .text("Weather in Oslo, " + id + "? \u00dcn\u00efc\u00f8d\u00e9 \u2614 \u65e5\u672c\u8a9e \ud83c\udf27")
                                .metadata(Map.of("channel", "web", "attempt", 2))
                                .build(),
                        AssistantMessage.builder().content("").toolCalls(List.of(
                                new AssistantMessage.ToolCall("c1", "function", "weather", "{\"city\":\"Oslo\"}"))).build(),
                        ToolResponseMessage.builder().responses(List.of(
                                new ToolResponseMessage.ToolResponse("c1", "weather", "sunny"))).build(),
                        new AssistantMessage("Sunny. \u2600")));
            }
        }
    }
}
