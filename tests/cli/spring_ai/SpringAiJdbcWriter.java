// Writes conversations with Spring AI's own JdbcChatMemoryRepository, for the importer tests.
// Usage: java -cp 'lib/*' SpringAiJdbcWriter.java JDBC_URL USER PASSWORD CONVERSATION_ID...
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import org.springframework.ai.chat.memory.repository.jdbc.JdbcChatMemoryRepository;
import org.springframework.ai.chat.memory.repository.jdbc.PostgresChatMemoryRepositoryDialect;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.messages.SystemMessage;
import org.springframework.ai.chat.messages.ToolResponseMessage;
import org.springframework.ai.chat.messages.UserMessage;
import org.springframework.core.io.ClassPathResource;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.util.StreamUtils;

public class SpringAiJdbcWriter {
    public static void main(String[] args) throws Exception {
        var jdbc = new JdbcTemplate(new DriverManagerDataSource(args[0], args[1], args[2]));
        var schema = StreamUtils.copyToString(
                new ClassPathResource("org/springframework/ai/chat/memory/repository/jdbc/schema-postgresql.sql")
                        .getInputStream(),
                StandardCharsets.UTF_8);
        for (String statement : schema.split(";")) {
            if (!statement.isBlank()) {
                jdbc.execute(statement);
            }
        }
        var repository = JdbcChatMemoryRepository.builder()
                .jdbcTemplate(jdbc)
                .dialect(new PostgresChatMemoryRepositoryDialect())
                .build();
        for (int i = 3; i < args.length; i++) {
            String id = args[i];
            var call = new AssistantMessage("", Map.of(),
                    List.of(new AssistantMessage.ToolCall("c1", "function", "weather", "{\"city\":\"Oslo\"}")));
            var result = new ToolResponseMessage(
                    List.of(new ToolResponseMessage.ToolResponse("c1", "weather", "sunny")));
            repository.saveAll(id, List.of(
                    new SystemMessage("Be brief."),
                    new UserMessage("Weather in Oslo, " + id + "?"),
                    call,
                    result,
                    new AssistantMessage("Sunny.")));
        }
    }
}
