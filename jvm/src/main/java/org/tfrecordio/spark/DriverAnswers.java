package org.tfrecordio.spark;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A data source whose rows the driver computes while the query is planned: its scan is a
 * {@link LocalScan}, so reading it runs no Spark job (it answers also while every task slot is
 * busy). What the driver knows (its executors, its last scan) reaches a client that has only
 * the DataFrame API (Spark Connect) this way; a subclass says what, from the read's options.
 */
public abstract class DriverAnswers implements TableProvider {
  /** The schema of the answer to the read with these options. */
  protected abstract StructType schema(CaseInsensitiveStringMap options);

  /** The answer, computed on the driver when Spark asks for the rows. */
  protected abstract InternalRow[] rows(CaseInsensitiveStringMap options);

  @Override
  public final StructType inferSchema(CaseInsensitiveStringMap options) {
    return schema(options);
  }

  @Override
  public final Table getTable(StructType schema, Transform[] partitioning,
      Map<String, String> properties) {
    return new Answers(this, schema);
  }

  /** The one table: its scan reads the options it is given. */
  private static final class Answers implements Table, SupportsRead {
    private final DriverAnswers source;
    private final StructType schema;

    Answers(DriverAnswers source, StructType schema) {
      this.source = source;
      this.schema = schema;
    }

    @Override
    public String name() {
      return source.getClass().getSimpleName();
    }

    @Override
    @SuppressWarnings("deprecation") // Spark 4 prefers columns(); Spark 3.5 has schema() only
    public StructType schema() {
      return schema;
    }

    @Override
    public Set<TableCapability> capabilities() {
      return EnumSet.of(TableCapability.BATCH_READ);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
      return () -> new LocalScan() {
        @Override
        public StructType readSchema() {
          return schema;
        }

        @Override
        public InternalRow[] rows() {
          return source.rows(options);
        }
      };
    }
  }
}
