"""The launcher's guard: a small process that ends the job when the launcher dies (``kill -9``).

The launcher starts it before the job, in a session of its own, with the read end of a pipe whose
write end only the launcher holds. The launcher writes the job's process-group id into the pipe,
then ``done`` once it has marked the end of training itself. An end of file without ``done`` means
the launcher died, whatever the cause: the guard sends SIGTERM to the job's process group, SIGKILL
after ``term_grace`` seconds, and then marks the end of training (``training_job_end.ts`` in the
trial, the profiler's end markers), so that a reader of the trial (``smdebug watch``) is not left
waiting. status.json is the launcher's: it stays as the launcher last wrote it.

Run by path (``python guard.py CONFIG``) it imports the standard library only, until the launcher
has died (then smdebug's storage, to write the markers).
"""

import sys

if __name__ == "__main__":  # run by path: its folder (smdebug/launch) must not shadow the standard library
    del sys.path[0]

import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

__all__ = ["Guard", "end_group", "mark_end_of_training"]


def mark_end_of_training(out_dir: str, profiler_dir: str | None = None) -> None:
    """``training_job_end.ts`` in the trial at ``out_dir`` and the profiler's end markers, where absent."""
    import logging

    from smdebug.core.output.locations import END_OF_JOB
    from smdebug.launch.profiler_jobs import write_end_markers
    from smdebug.storage import open_store

    try:
        store = open_store(out_dir)
        if not store.exists(END_OF_JOB):
            store.write(END_OF_JOB, b"")
    except Exception as exc:
        logging.getLogger("smdebug").error("smdebug: could not mark the end of training in %s: %s", out_dir, exc)
    if profiler_dir is not None:
        write_end_markers(profiler_dir)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def end_group(pgid: int, term_grace: float) -> None:
    """SIGTERM to the process group, SIGKILL to what is left after ``term_grace`` seconds."""
    for sig, grace in ((signal.SIGTERM, term_grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + grace
        while _group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.05)  # the processes are not our children: nothing to wait on but their ids
        if not _group_alive(pgid):
            return


class Guard:
    """The launcher's side: ``start()`` before the job, ``watch(pgid)`` once it runs, ``release()``
    once the launcher has marked the end of training; ``close()`` without ``release()`` ends the job
    as the launcher's death would."""

    def __init__(self, term_grace: float, out_dir: str | None, profiler_dir: str | None = None) -> None:
        self.config = {
            "term_grace": term_grace,
            "out_dir": out_dir,
            "profiler_dir": profiler_dir,
            "path": os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
        }
        self._w: int | None = None
        self._proc: subprocess.Popen | None = None

    def start(self) -> bool:
        if not sys.executable:  # an embedded interpreter: no guard
            return False
        r, w = os.pipe()  # not inherited by the job (PEP 446)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), json.dumps({**self.config, "fd": r})],
                pass_fds=(r,),
                start_new_session=True,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
            )
        except OSError:
            os.close(w)
            return False
        finally:
            os.close(r)
        self._w = w
        return True

    def _send(self, text: str) -> None:
        if self._w is not None:
            try:
                os.write(self._w, text.encode())
            except OSError:  # the guard is gone: nothing to tell
                pass

    def watch(self, pgid: int) -> None:
        self._send(f"{pgid}\n")

    def release(self) -> None:
        self._send("done\n")
        self.close()
        if self._proc is not None:
            try:
                self._proc.wait(timeout=5.0)  # it ends at once after "done"
            except subprocess.TimeoutExpired:
                pass

    def close(self) -> None:
        w, self._w = self._w, None
        if w is not None:
            os.close(w)


def _say(msg: str) -> None:
    try:
        print(f"smdebug run (guard): {msg}", file=sys.stderr, flush=True)
    except Exception:  # noqa: BLE001 - the terminal may be gone with the launcher
        pass


def main(config: dict) -> int:
    chunks = []
    while chunk := os.read(config["fd"], 64):  # until the launcher closes its end, or dies
        chunks.append(chunk)
    words = b"".join(chunks).decode().split()
    if not words or "done" in words:
        return 0  # the job never started, or the launcher saw it end
    pgid = int(words[0])
    _say(f"the launcher ended before the job did: SIGTERM to the job's process group {pgid}")
    end_group(pgid, float(config["term_grace"]))
    if config["out_dir"] is not None:
        sys.path.insert(0, config["path"])
        mark_end_of_training(config["out_dir"], config["profiler_dir"])
        _say(f"marked the end of training in {config['out_dir']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(json.loads(sys.argv[1])))
