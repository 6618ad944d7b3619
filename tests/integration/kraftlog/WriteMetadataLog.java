// Writes a KRaft metadata log segment, or a snapshot, with Kafka's own classes, for the import tests and the
// benchmarks: each input line is one record as JSON {"batch": B, "type": "TOPIC_RECORD", "version": 0, "data": {...}};
// consecutive lines with the same batch number form one record batch (Raft epoch 1). The input is streamed: each
// batch is written once its last line is read.
// Usage: WriteMetadataLog RECORDS.jsonl OUT.log [BASE_OFFSET]   (appends to the segment OUT.log)
//        WriteMetadataLog RECORDS.jsonl DIR/<end offset>-<epoch>.checkpoint
//   (a snapshot through RecordsSnapshotWriter and FileRawSnapshotWriter: header, the batches, footer)
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.File;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.metadata.MetadataJsonConverters;
import org.apache.kafka.common.metadata.MetadataRecordType;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.record.FileRecords;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.SimpleRecord;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.KRaftVersion;
import org.apache.kafka.server.common.OffsetAndEpoch;
import org.apache.kafka.snapshot.FileRawSnapshotWriter;
import org.apache.kafka.snapshot.RecordsSnapshotWriter;

public class WriteMetadataLog {
    static ApiMessageAndVersion message(JsonNode line) {
        short version = (short) line.get("version").asInt();
        short apiKey = MetadataRecordType.valueOf(line.get("type").asText()).id();
        ApiMessage message = MetadataJsonConverters.readJson(line.get("data"), apiKey, version);
        return new ApiMessageAndVersion(message, version);
    }

    static SimpleRecord encode(ApiMessageAndVersion record, long timestamp) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        ByteBuffer value = ByteBuffer.allocate(MetadataRecordSerde.INSTANCE.recordSize(record, cache));
        MetadataRecordSerde.INSTANCE.write(record, cache, new ByteBufferAccessor(value));
        value.flip();
        return new SimpleRecord(timestamp, null, value);
    }

    // Streams the input's batches, in order, to `out`.
    static void batches(File input, Consumer<List<ApiMessageAndVersion>> out) throws Exception {
        ObjectMapper json = new ObjectMapper();
        List<ApiMessageAndVersion> batch = new ArrayList<>();
        int current = Integer.MIN_VALUE;
        try (BufferedReader reader = Files.newBufferedReader(input.toPath())) {
            for (String text = reader.readLine(); text != null; text = reader.readLine()) {
                if (text.isBlank()) continue;
                JsonNode line = json.readTree(text);
                if (line.get("batch").asInt() != current && !batch.isEmpty()) {
                    out.accept(batch);
                    batch = new ArrayList<>();
                }
                current = line.get("batch").asInt();
                batch.add(message(line));
            }
        }
        if (!batch.isEmpty()) out.accept(batch);
    }

    public static void main(String[] args) throws Exception {
        File output = new File(args[1]);
        String name = output.getName();
        if (name.endsWith(".checkpoint")) {
            String[] id = name.substring(0, name.length() - ".checkpoint".length()).split("-");
            OffsetAndEpoch snapshotId = new OffsetAndEpoch(Long.parseLong(id[0]), Integer.parseInt(id[1]));
            try (RecordsSnapshotWriter<ApiMessageAndVersion> writer = new RecordsSnapshotWriter.Builder()
                    .setKraftVersion(KRaftVersion.KRAFT_VERSION_0).setTime(Time.SYSTEM).setMaxBatchSize(8 << 20)
                    .setRawSnapshotWriter(FileRawSnapshotWriter.create(output.getParentFile().toPath(), snapshotId))
                    .build(MetadataRecordSerde.INSTANCE)) {
                batches(new File(args[0]), writer::append);
                writer.freeze();
            }
            return;
        }
        long[] offset = {args.length > 2 ? Long.parseLong(args[2]) : 0};
        long[] timestamp = {1_700_000_000_000L};
        try (FileRecords out = FileRecords.open(output)) {
            batches(new File(args[0]), batch -> {
                SimpleRecord[] records = new SimpleRecord[batch.size()];
                for (int i = 0; i < records.length; i++) records[i] = encode(batch.get(i), timestamp[0]++);
                try {
                    out.append(MemoryRecords.withRecords(offset[0], Compression.NONE, 1, records));
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
                offset[0] += records.length;
            });
            out.flush();
        }
    }
}
