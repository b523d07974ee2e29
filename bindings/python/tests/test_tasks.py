"""Tasks through toolnexus_c against the fixture server's `--tasks` mode: call_async
returns a required-task tool's result like any call, its on_progress sees the task's status
changes (with the resume token), and a wait that ends while the task works gives a pending
that carries the task, which Client.resume collects without running the tool again."""

import asyncio

import pytest

import toolnexus_c as tn
from tn_support import FIXTURE


def config(era):
    return {"mcpServers": {"fx": {"command": [FIXTURE, "--dual", "--tasks"], "protocol": era}}}


def test_call_async_returns_the_task_result_and_reports_status():
    for era in ("legacy", "modern"):
        with tn.Client(config(era)) as c:
            seen = []
            r = asyncio.run(c.call_async("fx_task_slow", {"ms": 300, "steps": 3}, on_progress=seen.append))
            assert (r.output, r.is_error) == ("slow task done after 3 steps", False), r
            statuses = [p.task["status"] for p in seen if p.task]
            assert statuses[0] == "working" and statuses[-1] == "completed", statuses
            assert all(p.resume.startswith("tn1.") for p in seen if p.task)


def test_pending_carries_the_task_and_resume_collects_it():
    with tn.Client(config("modern")) as c:
        r = c.call("fx_task_slow", {"ms": 1200, "steps": 1}, timeout_ms=200)
        assert not r.is_error and r.pending is not None, r
        task = r.pending["task"]
        assert task["status"] == "working" and task["taskId"], r.pending
        done = c.resume(r.pending["resume"], {})
        assert (done.output, done.is_error) == ("slow task done after 1 steps", False), done


def test_tasks_lists_a_servers_tasks_and_refuses_one_without():
    with tn.Client(config("legacy")) as c:
        c.call("fx_task_slow", {"ms": 50, "steps": 1})
        listing = c.tasks("fx")
        assert listing["server"] == "fx" and isinstance(listing["tasks"], list), listing
    with tn.Client({"mcpServers": {"fx": {"command": [FIXTURE]}}}) as c:
        with pytest.raises(tn.NotFound):
            c.tasks("fx")
        with pytest.raises(tn.NotFound):
            c.tasks("nope")
