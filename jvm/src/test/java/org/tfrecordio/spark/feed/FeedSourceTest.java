package org.tfrecordio.spark.feed;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.lang.reflect.Constructor;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.junit.Test;

/**
 * The feed source's kept batches: whose Connect session they are (from Spark Connect's job tag),
 * and their release by {@code release} or by the end of that session (no Spark needed).
 */
public class FeedSourceTest {
  private static final String SESSION_A = "5f3c2a1e-0000-4000-8000-00000000000a";
  private static final String SESSION_B = "5f3c2a1e-0000-4000-8000-00000000000b";

  private static String tag(String first, String second) {
    return "SparkConnect_OperationTag_User_" + first + "_Session_" + second
        + "_Operation_0f0e0d0c-0000-4000-8000-000000000001";
  }

  @Test
  public void aConnectOperationsSessionIsReadFromItsJobTagInEitherOrder() {
    String coordinates = FeedSource.sessionOfTags("mine," + tag("alice_x", SESSION_A)
        + ",SparkConnect_SessionTag_User_alice_Session_" + SESSION_A + "_Tag_t");
    assertEquals("User_alice_x_Session_" + SESSION_A, coordinates);
    assertTrue(FeedSource.isSession(coordinates, SESSION_A));
    assertFalse(FeedSource.isSession(coordinates, SESSION_B));
    // Spark versions that write the session id where the user's belongs
    String swapped = FeedSource.sessionOfTags(tag(SESSION_A, "alice"));
    assertTrue(FeedSource.isSession(swapped, SESSION_A));
    assertFalse(FeedSource.isSession(swapped, "alice_" + SESSION_A));
  }

  @Test
  public void outsideSparkConnectTheSessionIsEmptyAndNoSessionEndFreesIt() {
    assertEquals("", FeedSource.sessionOfTags(null));
    assertEquals("", FeedSource.sessionOfTags("a,b"));
    assertFalse(FeedSource.isSession("", SESSION_A));
    assertFalse(FeedSource.isSession("", ""));
  }

  private static FeedSource.Kept<String> kept(List<String> freed) {
    return new FeedSource.Kept<>(freed::add);
  }

  @Test
  public void keptValuesAreMadeOncePerSessionAndViewAndFreedByRelease() {
    List<String> freed = new ArrayList<>();
    FeedSource.Kept<String> kept = kept(freed);
    String a = FeedSource.sessionOfTags(tag("u", SESSION_A));
    String b = FeedSource.sessionOfTags(tag("u", SESSION_B));
    assertEquals("a-v", kept.keep(a, "v", () -> "a-v"));
    assertEquals("a-v", kept.keep(a, "v", () -> "made again"));
    assertEquals("b-v", kept.keep(b, "v", () -> "b-v")); // same view name, other session
    assertEquals(2, kept.count(null));
    assertEquals(1, kept.count(SESSION_A));
    kept.release(a, "v", () -> { });
    kept.release(a, "v", () -> { }); // once only
    assertEquals(Collections.singletonList("a-v"), freed);
    assertEquals(0, kept.count(SESSION_A));
    assertEquals(1, kept.count(SESSION_B));
  }

  /**
   * A feeding job planned while the batches are released keeps them at one of three points:
   * while the release forgets the view, before or after the view is gone (it gets the value
   * kept, which the release then frees), or after the release (it cannot make the value: the
   * view is gone). At none is a value left kept that nothing frees.
   */
  @Test
  public void aKeepDuringAReleaseCannotLeaveAValueThatNothingFrees() {
    for (String point : List.of("before the view is gone", "after", "after the release")) {
      List<String> freed = new ArrayList<>();
      FeedSource.Kept<String> kept = kept(freed);
      AtomicBoolean view = new AtomicBoolean(true);
      List<String> got = new ArrayList<>();
      Runnable keepNow = () -> {
        try {
          got.add(kept.keep("", "v", () -> {
            if (!view.get()) {
              throw new IllegalStateException("no such view");
            }
            return "made";
          }));
        } catch (IllegalStateException e) {
          got.add(e.getMessage());
        }
      };
      keepNow.run();
      kept.release("", "v", () -> {
        if (point.startsWith("before")) {
          keepNow.run();
        }
        view.set(false);
        if (point.equals("after")) {
          keepNow.run();
        }
      });
      if (point.equals("after the release")) {
        keepNow.run();
      }
      assertEquals(point, 0, kept.count(null));
      assertEquals(point, List.of("made"), freed);
      assertEquals(point, List.of("made", point.endsWith("release") ? "no such view" : "made"),
          got);
    }
  }

  @Test
  public void theEndOfASessionFreesItsKeptValuesOnly() {
    List<String> freed = new ArrayList<>();
    FeedSource.Kept<String> kept = kept(freed);
    kept.keep(FeedSource.sessionOfTags(tag("u", SESSION_A)), "v1", () -> "a-v1");
    kept.keep(FeedSource.sessionOfTags(tag(SESSION_A, "u")), "v2", () -> "a-v2");
    kept.keep(FeedSource.sessionOfTags(tag("u", SESSION_B)), "v1", () -> "b-v1");
    kept.keep("", "v1", () -> "classic");
    kept.releaseSession(SESSION_A);
    Collections.sort(freed);
    assertEquals(List.of("a-v1", "a-v2"), freed);
    assertEquals(2, kept.count(null)); // B's and the classic session's
    assertEquals(0, kept.count(SESSION_A));
  }

  /** Spark Connect's session-closed event, when its class is on the classpath. */
  private static SparkListenerEvent sessionClosed(String sessionId) throws Exception {
    Class<?> event;
    try {
      event = Class.forName(FeedSource.SessionEnds.SESSION_CLOSED);
    } catch (ClassNotFoundException e) {
      assumeTrue("Spark Connect's server is not on the test classpath", false);
      return null;
    }
    for (Constructor<?> c : event.getConstructors()) {
      Class<?>[] types = c.getParameterTypes();
      Object[] args = new Object[types.length];
      for (int i = 0; i < types.length; i++) {
        if (types[i] == String.class) {
          args[i] = i == 0 ? sessionId : "user";
        } else if (types[i] == long.class) {
          args[i] = 0L;
        } else {
          args[i] = scala.collection.immutable.Map$.MODULE$.empty();
        }
      }
      return (SparkListenerEvent) c.newInstance(args);
    }
    throw new AssertionError("no constructor");
  }

  @Test
  public void theListenerFreesASessionsKeptValuesOnSparkConnectsSessionClosedEvent()
      throws Exception {
    List<String> freed = new ArrayList<>();
    FeedSource.Kept<String> kept = kept(freed);
    kept.keep(FeedSource.sessionOfTags(tag("u", SESSION_A)), "v", () -> "a-v");
    kept.keep(FeedSource.sessionOfTags(tag("u", SESSION_B)), "v", () -> "b-v");
    FeedSource.SessionEnds listener = new FeedSource.SessionEnds(kept);
    listener.onOtherEvent(new SparkListenerEvent() { }); // another event: nothing
    assertEquals(2, kept.count(null));
    listener.onOtherEvent(sessionClosed(SESSION_A));
    assertEquals(Collections.singletonList("a-v"), freed);
    assertEquals(1, kept.count(null));
  }
}
