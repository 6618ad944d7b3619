// Writes a KRaft metadata log segment with Kafka's own classes, for the import tests: each input line is one
// record as JSON {"batch": B, "type": "TOPIC_RECORD", "version": 0, "data": {...}}; consecutive lines with the same
// batch number form one record batch (Raft epoch 1). Usage: WriteMetadataLog RECORDS.jsonl OUT.log [BASE_OFFSET]
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.metadata.MetadataJsonConverters;
import org.apache.kafka.common.metadata.MetadataRecordType;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.record.FileRecords;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.SimpleRecord;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.server.common.ApiMessageAndVersion;

public class WriteMetadataLog {
    static SimpleRecord encode(JsonNode line, long timestamp) {
        short version = (short) line.get("version").asInt();
        short apiKey = MetadataRecordType.valueOf(line.get("type").asText()).id();
        ApiMessage message = MetadataJsonConverters.readJson(line.get("data"), apiKey, version);
        ApiMessageAndVersion record = new ApiMessageAndVersion(message, version);
        ObjectSerializationCache cache = new ObjectSerializationCache();
        ByteBuffer value = ByteBuffer.allocate(MetadataRecordSerde.INSTANCE.recordSize(record, cache));
        MetadataRecordSerde.INSTANCE.write(record, cache, new ByteBufferAccessor(value));
        value.flip();
        return new SimpleRecord(timestamp, null, value);
    }

    public static void main(String[] args) throws Exception {
        ObjectMapper json = new ObjectMapper();
        List<List<SimpleRecord>> batches = new ArrayList<>();
        int current = Integer.MIN_VALUE;
        long timestamp = 1_700_000_000_000L;
        for (String text : Files.readAllLines(new File(args[0]).toPath())) {
            if (text.isBlank()) continue;
            JsonNode line = json.readTree(text);
            if (line.get("batch").asInt() != current) {
                current = line.get("batch").asInt();
                batches.add(new ArrayList<>());
            }
            batches.get(batches.size() - 1).add(encode(line, timestamp++));
        }
        long offset = args.length > 2 ? Long.parseLong(args[2]) : 0;
        try (FileRecords out = FileRecords.open(new File(args[1]))) {
            for (List<SimpleRecord> batch : batches) {
                out.append(MemoryRecords.withRecords(offset, Compression.NONE, 1, batch.toArray(new SimpleRecord[0])));
                offset += batch.size();
            }
            out.flush();
        }
    }
}
