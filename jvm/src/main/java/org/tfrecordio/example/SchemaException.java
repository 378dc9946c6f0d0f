package org.tfrecordio.example;

/**
 * Data does not fit a schema: a column type with no TFRecord form, a feature of the wrong kind
 * or length for its field, conflicting kinds across records, or a record that does not parse.
 * Messages name the column or feature. The Python API raises
 * {@code tfrecord_io.errors.SchemaError} for it.
 */
public class SchemaException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  public SchemaException(String message) {
    super(message);
  }

  public SchemaException(String message, Throwable cause) {
    super(message, cause);
  }

  /** A name quoted as Python's repr quotes it ({@code 'x'}), so messages match the Python codec. */
  public static String q(String name) {
    if (name.indexOf('\'') >= 0 && name.indexOf('"') < 0) {
      return '"' + name + '"';
    }
    return "'" + name.replace("\\", "\\\\").replace("'", "\\'") + "'";
  }
}
