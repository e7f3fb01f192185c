import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.connectors.HttpsConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;

/**
 * Runs Neo4j Community embedded as a test server: Bolt only, on 127.0.0.1, no
 * authentication, small page cache. It runs until the JVM is asked to stop
 * (SIGTERM / SIGINT), then shuts the databases down cleanly.
 *
 * <p>Usage: {@code Neo4jLauncher HOME_DIR BOLT_PORT [PAGECACHE_MB]}. HOME_DIR
 * receives data/ and logs/. Only typed settings are used: an unknown setting
 * name would fail Neo4j's strict config validation.
 */
public final class Neo4jLauncher {
    private Neo4jLauncher() {}

    public static void main(String[] args) throws InterruptedException {
        if (args.length < 2) {
            System.err.println("usage: Neo4jLauncher HOME_DIR BOLT_PORT [PAGECACHE_MB]");
            System.exit(2);
        }
        Path home = Path.of(args[0]).toAbsolutePath();
        int port = Integer.parseInt(args[1]);
        long pageCacheMb = args.length > 2 ? Long.parseLong(args[2]) : 64;

        DatabaseManagementService dbms;
        try {
            dbms = start(home, port, pageCacheMb);
        } catch (RuntimeException e) {
            // Exit rather than linger: Neo4j may already have non-daemon threads.
            e.printStackTrace();
            System.exit(1);
            return;
        }

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.println("NEO4J STOPPING");
            try {
                dbms.shutdown();
            } finally {
                System.out.println("NEO4J STOPPED");
                stopped.countDown();
            }
        }, "neo4j-launcher-shutdown"));
        System.out.println("NEO4J READY bolt://127.0.0.1:" + port);
        stopped.await();
    }

    private static DatabaseManagementService start(Path home, int port, long pageCacheMb) {
        DatabaseManagementService dbms = new DatabaseManagementServiceBuilder(home)
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, new SocketAddress("127.0.0.1", port))
                // Plain Bolt: the tests connect with bolt://, no certificates.
                .setConfig(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED)
                .setConfig(HttpConnector.enabled, false)
                .setConfig(HttpsConnector.enabled, false)
                .setConfig(GraphDatabaseSettings.auth_enabled, false)
                // The default page cache is about half of the machine's RAM.
                .setConfig(GraphDatabaseSettings.pagecache_memory, pageCacheMb * 1024 * 1024)
                // No usage reports: the machine has no route to them anyway.
                .setConfig(GraphDatabaseSettings.udc_enabled, false)
                .build();
        try {
            // The default database answers a query: Bolt clients can use it now.
            dbms.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME).executeTransactionally("RETURN 1");
        } catch (RuntimeException e) {
            dbms.shutdown();
            throw e;
        }
        return dbms;
    }
}
