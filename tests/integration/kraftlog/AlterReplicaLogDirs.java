import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeReplicaLogDirsResult.ReplicaLogDirInfo;
import org.apache.kafka.common.TopicPartitionReplica;

/**
 * Moves one replica to another log dir of its broker through Kafka's Admin API (AlterReplicaLogDirs, what
 * kafka-reassign-partitions sends for the {@code log_dirs} of its JSON), then waits until the broker has swapped
 * in the future replica (DescribeReplicaLogDirs: no future dir, the current one the target): that is when the
 * broker tells the controller (AssignReplicasToDirs). {@code AlterReplicaLogDirs BOOTSTRAP BROKER TOPIC PARTITION
 * DIR}; exits 1 when the move has not finished within 30 seconds.
 */
public class AlterReplicaLogDirs {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        TopicPartitionReplica replica =
            new TopicPartitionReplica(args[2], Integer.parseInt(args[3]), Integer.parseInt(args[1]));
        String target = args[4];
        try (Admin admin = Admin.create(props)) {
            admin.alterReplicaLogDirs(Map.of(replica, target)).all().get();
            long deadline = System.currentTimeMillis() + 30_000;
            while (System.currentTimeMillis() < deadline) {
                ReplicaLogDirInfo info = admin.describeReplicaLogDirs(List.of(replica)).all().get().get(replica);
                if (info.getFutureReplicaLogDir() == null && target.equals(info.getCurrentReplicaLogDir())) {
                    return;
                }
                Thread.sleep(200);
            }
        }
        System.err.println("the move of " + replica + " to " + target + " did not finish within 30 seconds");
        System.exit(1);
    }
}
