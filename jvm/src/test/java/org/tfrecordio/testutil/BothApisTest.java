package org.tfrecordio.testutil;

import org.junit.Rule;
import org.junit.rules.TemporaryFolder;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameter;
import org.junit.runners.Parameterized.Parameters;

/**
 * Base of the tests that run once per Hadoop API ({@link HadoopApi}): the parameter
 * {@link #api} and a temporary folder {@link #tmp} per test.
 */
@RunWith(Parameterized.class)
public abstract class BothApisTest {
  @Parameters(name = "{0}")
  public static Object[] apis() {
    return HadoopApi.values();
  }

  @Parameter
  public HadoopApi api;

  @Rule
  public TemporaryFolder tmp = new TemporaryFolder();
}
