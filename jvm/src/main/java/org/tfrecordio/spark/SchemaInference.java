package org.tfrecordio.spark;

import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.hadoop.io.BytesWritable;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tfrecordio.example.ExampleWire;
import org.tfrecordio.example.RecordScanner;
import org.tfrecordio.example.ByteKeyMap;
import org.tfrecordio.example.SchemaException;
import org.tfrecordio.example.FeatureView;

/**
 * Infers a DataFrame schema from serialized Examples or SequenceExamples, by the rules of the
 * Python codec's {@code tfrecord_io.example.infer_schema}:
 *
 * <ul>
 *   <li>{@code int64_list} -&gt; long, {@code float_list} -&gt; float, {@code bytes_list} -&gt;
 *       string, or binary if the feature is in {@code binaryFeatures} or any value is not valid
 *       UTF-8;
 *   <li>exactly one value in every record where the feature has a kind -&gt; a scalar column,
 *       any other length anywhere -&gt; array;
 *   <li>a feature absent from some record, or present there with no kind set, is null there:
 *       the field is nullable (arrays: only absence counts, no kind reads as empty); a feature
 *       that never has a kind -&gt; type null;
 *   <li>different kinds in different records -&gt; {@link SchemaException} naming it;
 *   <li>fields sorted by name; SequenceExample: context features, then feature lists as
 *       {@code array<array<type>>}; a name that is both -&gt; {@link SchemaException};
 *   <li>a feature (or feature list) whose name is not valid UTF-8 is skipped, as TensorFlow's
 *       parsers and the Python codec skip it: no column can name it (decoded with replacement,
 *       two such names could become one column mixing two features' values); each task logs one
 *       warning naming those it skipped and where it read them.
 * </ul>
 *
 * <p>Each task summarizes its records ({@link #summarize}); the driver merges the summaries
 * and builds the schema ({@link #schema}).
 */
final class SchemaInference {
  private static final Logger LOG = LoggerFactory.getLogger(SchemaInference.class);
  /** How many skipped names a warning shows. */
  private static final int SHOWN_NAMES = 5;

  private SchemaInference() {}

  /** What one feature (or feature list) holds across records. */
  static final class Stat implements Serializable {
    private static final long serialVersionUID = 1L;
    /** Bit {@code 1 << kind} for each kind seen (no-kind occurrences not counted). */
    int kinds;
    /** Records that have the feature. */
    long present;
    /** Records where it has a kind (context features). */
    long withKind;
    /** Some record with a kind has other than one value. */
    boolean notScalar;
    /** Some bytes value is not valid UTF-8. */
    boolean invalidUtf8;

    void merge(Stat o) {
      kinds |= o.kinds;
      present += o.present;
      withKind += o.withKind;
      notScalar |= o.notScalar;
      invalidUtf8 |= o.invalidUtf8;
    }
  }

  /** A summary of some records: their count and each feature's {@link Stat}. */
  static final class Summary implements Serializable {
    private static final long serialVersionUID = 1L;
    long records;
    final HashMap<String, Stat> context = new HashMap<>();
    final HashMap<String, Stat> featureLists = new HashMap<>();

    Summary merge(Summary o) {
      records += o.records;
      mergeInto(context, o.context);
      mergeInto(featureLists, o.featureLists);
      return this;
    }

    private static void mergeInto(Map<String, Stat> to, Map<String, Stat> from) {
      for (Map.Entry<String, Stat> e : from.entrySet()) {
        Stat s = to.get(e.getKey());
        if (s == null) {
          to.put(e.getKey(), e.getValue());
        } else {
          s.merge(e.getValue());
        }
      }
    }
  }

  /**
   * Summarizes the records of one task.
   *
   * @param where what errors add after a record's number to say where it is read from (the
   *     input split), or ""
   */
  static Summary summarize(Iterator<BytesWritable> records, boolean sequence,
      Set<String> binaryFeatures, String where) {
    ByteKeyMap ctxKeys = new ByteKeyMap();
    ByteKeyMap flKeys = new ByteKeyMap();
    RecordScanner scanner = new RecordScanner(sequence, ctxKeys, flKeys, true);
    List<Stat> ctx = new ArrayList<>();
    List<Stat> fls = new ArrayList<>();
    List<Boolean> ctxCheckUtf8 = new ArrayList<>();
    List<Boolean> flCheckUtf8 = new ArrayList<>();
    FeatureView view = new FeatureView();
    RecordScanner.Steps steps = new RecordScanner.Steps();
    // Names that are not UTF-8, in the order first seen, with the record first having each.
    Map<String, Long> skipped = new LinkedHashMap<>();
    long n = 0;
    while (records.hasNext()) {
      BytesWritable rec = records.next();
      long number = n++;
      // Every part of a record is parsed here (its map entries by the scan, each feature as it
      // is summarized): any of them that does not parse names the record, its file and split.
      try {
        scanner.scan(rec.getBytes(), 0, rec.getLength());
        RecordScanner.Entries ce = scanner.context;
        for (int j = 0; j < ce.count; j++) {
          int id = ce.touched[j];
          while (ctx.size() <= id) {
            byte[] key = ctxKeys.key(ctx.size());
            ctx.add(stat(key, number, skipped));
            ctxCheckUtf8.add(!binaryFeatures.contains(name(key)));
          }
          Stat st = ctx.get(id);
          if (st == null) {
            continue; // a name that is not UTF-8
          }
          st.present++;
          scanner.feature(ce, id, view);
          if (view.kind == ExampleWire.NO_KIND) {
            continue;
          }
          st.withKind++;
          st.kinds |= 1 << view.kind;
          if (!st.notScalar && view.count() != 1) {
            st.notScalar = true;
          }
          if (view.kind == ExampleWire.BYTES && !st.invalidUtf8 && ctxCheckUtf8.get(id)
              && !view.allUtf8()) {
            st.invalidUtf8 = true;
          }
        }
        if (!sequence) {
          continue;
        }
        RecordScanner.Entries fe = scanner.featureLists;
        for (int j = 0; j < fe.count; j++) {
          int id = fe.touched[j];
          while (fls.size() <= id) {
            byte[] key = flKeys.key(fls.size());
            fls.add(stat(key, number, skipped));
            flCheckUtf8.add(!binaryFeatures.contains(name(key)));
          }
          Stat st = fls.get(id);
          if (st == null) {
            continue; // a name that is not UTF-8
          }
          st.present++;
          int k = scanner.steps(fe.start[id], fe.end[id], steps);
          for (int s = 0; s < k; s++) {
            view.reset(scanner.buf);
            view.merge(steps.start[s], steps.end[s]);
            if (view.kind == ExampleWire.NO_KIND) {
              continue;
            }
            st.kinds |= 1 << view.kind;
            if (view.kind == ExampleWire.BYTES && !st.invalidUtf8 && flCheckUtf8.get(id)
                && !view.allUtf8()) {
              st.invalidUtf8 = true;
            }
          }
        }
      } catch (SchemaException e) {
        throw new SchemaException("record " + number + where + " is not a valid "
            + (sequence ? "SequenceExample" : "Example") + ": " + e.getMessage(), e);
      }
    }
    Summary out = new Summary();
    out.records = n;
    for (int id = 0; id < ctx.size(); id++) {
      if (ctx.get(id) != null) {
        out.context.put(name(ctxKeys.key(id)), ctx.get(id));
      }
    }
    for (int id = 0; id < fls.size(); id++) {
      if (fls.get(id) != null) {
        out.featureLists.put(name(flKeys.key(id)), fls.get(id));
      }
    }
    if (!skipped.isEmpty()) {
      LOG.warn(skippedWarning(skipped, where));
    }
    return out;
  }

  /**
   * A new feature's {@link Stat}, or null (and its name added to {@code skipped} with the
   * record first having it) when its name is not valid UTF-8.
   */
  private static Stat stat(byte[] key, long record, Map<String, Long> skipped) {
    if (ExampleWire.validUtf8(key, 0, key.length)) {
      return new Stat();
    }
    skipped.putIfAbsent(escaped(key), record);
    return null;
  }

  /**
   * The warning that the features of {@code skipped} (escaped names, each with the record that
   * first has it) were skipped, read from {@code where} (what errors add after a record's
   * number, or "").
   */
  static String skippedWarning(Map<String, Long> skipped, String where) {
    List<String> shown = new ArrayList<>();
    for (Map.Entry<String, Long> e : skipped.entrySet()) {
      if (shown.size() == SHOWN_NAMES) {
        shown.add("...");
        break;
      }
      shown.add(e.getKey() + " (first in record " + e.getValue() + ")");
    }
    return "Skipped " + skipped.size() + " feature(s) whose names are not valid UTF-8, in the "
        + "records" + (where.isEmpty() ? " of this task" : where) + ": "
        + String.join(", ", shown) + ". A name must be UTF-8 to be read as a column; "
        + "TensorFlow's parsers skip them too.";
  }

  /**
   * A name's bytes as Python writes a bytes literal ({@code b'a\xff'}): printable ASCII as
   * itself ({@code \} and {@code '} escaped), other bytes as {@code \xNN}.
   */
  static String escaped(byte[] key) {
    StringBuilder sb = new StringBuilder(key.length + 3).append("b'");
    for (byte b : key) {
      int c = b & 0xff;
      if (c == '\\' || c == '\'') {
        sb.append('\\').append((char) c);
      } else if (c >= 0x20 && c < 0x7f) {
        sb.append((char) c);
      } else {
        sb.append(String.format("\\x%02x", c));
      }
    }
    return sb.append('\'').toString();
  }

  private static String name(byte[] key) {
    return new String(key, StandardCharsets.UTF_8);
  }

  /**
   * The schema of the summarized records.
   *
   * @param sampled only some records were summarized: every field is nullable
   */
  static StructType schema(Summary s, Set<String> binaryFeatures, boolean sampled) {
    List<StructField> fields = new ArrayList<>();
    for (String name : sortedNames(s.context.keySet())) {
      if (s.featureLists.containsKey(name)) {
        throw new SchemaException(SchemaException.q(name)
            + " is both a context feature and a feature list");
      }
      Stat st = s.context.get(name);
      int kind = kindOf(name, st, "feature");
      DataType leaf = leafType(kind, st, binaryFeatures.contains(name));
      if (kind == ExampleWire.NO_KIND) {
        fields.add(DataTypes.createStructField(name, leaf, true));
      } else if (!st.notScalar) {
        fields.add(DataTypes.createStructField(name, leaf, sampled || st.withKind < s.records));
      } else {
        fields.add(DataTypes.createStructField(name, DataTypes.createArrayType(leaf, false),
            sampled || st.present < s.records));
      }
    }
    for (String name : sortedNames(s.featureLists.keySet())) {
      Stat st = s.featureLists.get(name);
      int kind = kindOf(name, st, "feature list");
      DataType leaf = leafType(kind, st, binaryFeatures.contains(name));
      fields.add(DataTypes.createStructField(name,
          DataTypes.createArrayType(DataTypes.createArrayType(leaf, false), false),
          sampled || st.present < s.records));
    }
    return DataTypes.createStructType(fields);
  }

  private static Collection<String> sortedNames(Set<String> names) {
    TreeSet<String> sorted = new TreeSet<>((a, b) -> ExampleWire.compareUtf8(
        a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8)));
    sorted.addAll(names);
    return sorted;
  }

  private static int kindOf(String name, Stat st, String what) {
    int kinds = st.kinds;
    if (Integer.bitCount(kinds) > 1) {
      List<String> labels = new ArrayList<>();
      for (int k : new int[] {ExampleWire.BYTES, ExampleWire.FLOAT, ExampleWire.INT64}) {
        if ((kinds & (1 << k)) != 0) {
          labels.add(ExampleWire.kindLabel(k));
        }
      }
      throw new SchemaException(what + " " + SchemaException.q(name)
          + " has conflicting kinds across records: " + String.join(" and ", labels));
    }
    return kinds == 0 ? ExampleWire.NO_KIND : Integer.numberOfTrailingZeros(kinds);
  }

  private static DataType leafType(int kind, Stat st, boolean binary) {
    switch (kind) {
      case ExampleWire.INT64:
        return DataTypes.LongType;
      case ExampleWire.FLOAT:
        return DataTypes.FloatType;
      case ExampleWire.BYTES:
        return binary || st.invalidUtf8 ? DataTypes.BinaryType : DataTypes.StringType;
      default:
        return DataTypes.NullType;
    }
  }
}
