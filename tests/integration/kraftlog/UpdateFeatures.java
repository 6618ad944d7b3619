import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;

/**
 * Sets finalized feature levels through Kafka's Admin API (UpdateFeatures), as kafka-features.sh upgrade/downgrade
 * does: {@code UpdateFeatures BOOTSTRAP name=level...}. A level below the finalized one is a safe downgrade; 0
 * turns the feature off.
 */
public class UpdateFeatures {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        try (Admin admin = Admin.create(props)) {
            Map<String, Short> finalized = new HashMap<>();
            admin.describeFeatures().featureMetadata().get().finalizedFeatures()
                .forEach((name, range) -> finalized.put(name, range.maxVersionLevel()));
            Map<String, FeatureUpdate> updates = new HashMap<>();
            for (int i = 1; i < args.length; i++) {
                String[] nameLevel = args[i].split("=", 2);
                short level = Short.parseShort(nameLevel[1]);
                boolean down = level < finalized.getOrDefault(nameLevel[0], (short) 0);
                updates.put(nameLevel[0], new FeatureUpdate(level,
                    down ? FeatureUpdate.UpgradeType.SAFE_DOWNGRADE : FeatureUpdate.UpgradeType.UPGRADE));
            }
            admin.updateFeatures(updates, new UpdateFeaturesOptions()).all().get();
        }
    }
}
