"""`preempt` of Go input follows preemu's model world, which runs no package init: before it does, the call runs
in the real program too (emu/drive/modelcheck.py), and a different result is refused."""
import io

from emu import cli


def test_a_function_whose_model_world_result_differs_from_the_real_program_is_refused(capsys):
    code = cli.main(["preempt", "tests/data/go/kinds", "--func", "initTable", "--reg", "RAX=5", "--at", "3"],
                    io.StringIO())
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "computes ~r0 = 10 in preemu's model world but 63 in its real program" in err[0]
    assert "preemu sweep tests/data/go/kinds --func main.initTable" in err[0]


def test_a_function_the_model_world_computes_as_the_real_program_does_is_followed(capsys):
    out = io.StringIO()
    code = cli.main(["preempt", "tests/go/corpus", "--func", "sumsq", "--reg", "RAX=5", "--at", "3"], out)
    assert code == 0 and "OK: the goroutine finished exactly as the uninterrupted run did" in out.getvalue()
