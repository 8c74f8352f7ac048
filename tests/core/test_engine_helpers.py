"""Small parts of the hook engine the framework hooks share: argument checks of the registration
methods, the guard of a hook's helper objects, and the late checks of device losses."""

from __future__ import annotations

import logging

import pytest

from smdebug.core.engine.arguments import instance_check
from smdebug.core.engine.guard import GuardedByHook, guarded
from smdebug.core.engine.nonfinite import LateChecks, NonFiniteWatch
from smdebug.exceptions import SMDebugTypeError


def test_instance_check_names_the_method_the_argument_and_what_it_must_be():
    check = instance_check("register_loss", "loss_module", int, "an int")
    check(None, 3)
    check(None, loss_module=3)
    with pytest.raises(SMDebugTypeError, match="register_loss: loss_module must be an int, not str"):
        check(None, "3")
    with pytest.raises(SMDebugTypeError, match="register_loss takes one argument, loss_module"):
        check(None, module=3)


class _Hook:
    disabled = False
    propagate_errors = False


class _Helper(GuardedByHook):
    def __init__(self, hook):
        self.hook = hook

    @guarded(default="skipped")
    def work(self):
        raise RuntimeError("boom")


def test_an_error_in_a_helper_disables_its_hook_or_propagates_as_the_hook_says(caplog):
    hook = _Hook()
    with caplog.at_level(logging.ERROR, logger="smdebug"):
        assert _Helper(hook).work() == "skipped"
    assert hook.disabled and "disabled the hook" in caplog.text
    other = _Hook()
    other.propagate_errors = True
    with pytest.raises(RuntimeError, match="boom"):
        _Helper(other).work()
    assert not other.disabled


class _Late:
    def __init__(self, name, step, ready, finite):
        self.name, self.step, self._ready, self._finite = name, step, ready, finite

    def ready(self):
        return self._ready

    def finite(self):
        return self._finite


def test_late_checks_tell_the_watch_once_ready_and_stop_after_its_first_nonfinite_value():
    watch = NonFiniteWatch(after=3)
    late = LateChecks(watch, limit=3)
    seen = []

    def see(name, finite, step):
        seen.append((name, step))
        watch.see(name, finite, step)

    late.add(_Late("loss", 0, True, True))
    late.add(_Late("loss", 1, False, False))
    late.add(_Late("loss", 2, True, True))
    assert not late.has_room()
    late.add(_Late("loss", 3, True, False))  # no room: left unread
    late.report(see)
    assert seen == [] and [c.step for c in late.pending] == [1]  # the finite ones dropped, step 1 waits
    late.pending[0]._ready = True
    late.add(_Late("loss", 4, False, False))
    late.report(see)
    assert seen == [("loss", 1)] and watch.first_step == 1
    assert late.pending == []  # the watch keeps quiet from now on: nothing more is held
