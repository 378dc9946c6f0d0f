"""tfrecord_io.testing.childjvm: a test service in a child JVM, its start, commands and stop.

The JVM here is a real one running a small Java program (Java's single-file source launcher)
that speaks the READY/command protocol: it prints its ready line, answers ``ping`` and ``fail``,
exits when its stdin closes, or exits at once when its first argument says so.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tfrecord_io.testing.childjvm import ChildJvm, JvmService, find_java

from processes import alive

_PROGRAM = textwrap.dedent("""\
    import java.io.BufferedReader;
    import java.io.InputStreamReader;

    public class Toy {
      public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("crash")) {
          System.err.println("toy: cannot start: no such thing");
          System.exit(3);
        }
        System.out.println("TOY READY {\\"answer\\": 42}");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
          if (line.equals("ping")) {
            System.out.println("OK pong");
          } else {
            System.out.println("ERROR no command " + line);
          }
          System.out.flush();
        }
      }
    }
""")


class ToyError(RuntimeError):
    pass


class Toy(JvmService):
    label = "the toy service"
    error = ToyError
    temp_prefix = "toy-"
    stop_wait = 10.0

    def __init__(self, source: Path, base_dir: Path | None = None, *, crash: bool = False):
        super().__init__(base_dir, startup_timeout=120.0)
        self.source = source
        self.crash = crash

    def _child_jvm(self, base_dir: Path) -> ChildJvm:
        java = find_java()
        assert java is not None
        args = [java, "-XX:TieredStopAtLevel=1", str(self.source)]
        return ChildJvm("TOY", [*args, "crash"] if self.crash else args,
                        base_dir / "toy.stderr", ToyError)

    @property
    def answer(self) -> int:
        return int(self._ready_info()["answer"])

    def ping(self) -> str:
        return self._started().command("ping", timeout=30)


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("toy") / "Toy.java"
    path.write_text(_PROGRAM)
    return path


def test_a_started_service_holds_its_ready_line_and_answers_commands(source):
    with Toy(source) as toy:
        assert toy.running
        assert toy.answer == 42
        assert toy.ping() == "pong"
        assert toy.start_seconds is not None and toy.start_seconds > 0


def test_a_failed_command_raises_the_service_error_with_the_answer(source):
    with Toy(source) as toy:
        with pytest.raises(ToyError, match="no command fail"):
            toy._started().command("fail", timeout=30)
        assert toy.ping() == "pong"


def test_stop_ends_the_jvm_and_removes_the_own_base_directory(source):
    toy = Toy(source).start()
    pid, base = toy.pid, toy.base_dir
    assert pid is not None and base is not None and base.name.startswith("toy-")
    toy.stop()
    assert not toy.running and toy.pid is None
    assert not alive(pid)
    assert not base.exists()
    toy.stop()  # twice is safe


def test_stop_keeps_a_base_directory_the_caller_gave(source, tmp_path):
    with Toy(source, tmp_path / "mine") as toy:
        (toy.base_dir / "kept.txt").write_text("data")
    assert (tmp_path / "mine" / "kept.txt").read_text() == "data"


def test_a_jvm_that_exits_before_ready_raises_with_its_stderr_and_leaves_nothing(source):
    toy = Toy(source, crash=True)
    with pytest.raises(ToyError, match=r"(?s)exited with code 3 before ready.*no such thing"):
        toy.start()
    assert not toy.running
    assert toy.base_dir is not None and not toy.base_dir.exists()


def test_a_service_not_started_says_so(source):
    toy = Toy(source)
    with pytest.raises(ToyError, match="the toy service is not started"):
        toy.ping()
    with pytest.raises(ToyError, match="the toy service is not started"):
        _ = toy.answer


def test_starting_a_started_service_again_is_refused(source):
    with Toy(source) as toy, pytest.raises(ToyError, match="already started"):
        toy.start()


def test_a_service_left_running_is_stopped_when_the_interpreter_exits(source, tmp_path):
    """A test that fails before its ``stop`` leaves neither the JVM nor an own directory."""
    program = textwrap.dedent(f"""\
        import sys
        sys.path[:0] = [{str(Path(__file__).parent)!r}, {str(Path(__file__).parents[1])!r}]
        from test_childjvm import Toy
        toy = Toy(__import__("pathlib").Path({str(source)!r})).start()
        print(toy.pid, toy.base_dir, flush=True)
    """)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=180, check=True)
    pid, base = done.stdout.split()
    assert not alive(int(pid))
    assert not Path(base).exists()
