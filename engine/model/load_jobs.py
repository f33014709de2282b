"""A model loaded in a background thread of the server, that any number of pages can watch.

The Set-up page and the sidebar's load button start a `LoadJob` (engine/model/loading.py's `load_model` in a
thread); a page that goes away does not stop it, and every other page finds the same job, then the same
loaded model. A job that failed says why and how to get the weights; pressing again starts a fresh one.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from ..errors import EngineError
from ..settings import load_settings
from .loading import LoadedModel, load_model
from .weights import first_line, how_to_get

MAX_EVENTS = 10_000  # progress events a job keeps (a download reports about every 10 MB)
_jobs: dict[str, LoadJob] = {}
_jobs_lock = threading.Lock()


@dataclass
class LoadJob:
    """One load of a model in a background thread of the process, that any number of pages can watch.

    The page that starts it draws its progress from `stage`, `done` and `total`; a page that
    stops (the learner clicks elsewhere, the tab closes) does not stop the load, and every
    other page finds the same job, then the same loaded model.
    """

    name: str
    stage: str = "starting"
    done: int = 0  # bytes so far, while downloading
    total: int = 0  # bytes in all, while downloading; 0 for a stage without a byte count
    model: LoadedModel | None = None
    error: str | None = None  # what failed and how to get the weights
    finished: threading.Event = field(default_factory=threading.Event, repr=False)
    events: list = field(default_factory=list, repr=False)  # every (done, total, stage) reported, in order

    def report(self, done: int, total: int, stage: str) -> None:
        self.done, self.total, self.stage = done, total, stage
        if len(self.events) < MAX_EVENTS:
            self.events.append((done, total, stage))

    def wait(self, timeout: float | None = None) -> bool:
        """Whether the load has finished (loaded or failed), waiting up to `timeout` seconds."""
        return self.finished.wait(timeout)


def start_load(name: str | None = None) -> LoadJob:
    """The running or finished load of `name`, or a new one started in a background thread.

    A second caller while a load runs gets the same job (one load however many press the
    button); a caller after a failure starts a fresh job, so pressing again retries.
    """
    name = name or load_settings().model
    with _jobs_lock:
        job = _jobs.get(name)
        if job is not None and (not job.finished.is_set() or job.error is None):
            return job
        job = _jobs[name] = LoadJob(name)

    def work():
        try:
            job.model = load_model(name, progress=job.report)
        except EngineError as error:
            job.error = str(error)
        except Exception as error:  # a thread must hand every failure back to the page that watches it
            job.error = f"loading {name} failed: {type(error).__name__}: {first_line(error)}. {how_to_get(name)}"
        finally:
            job.finished.set()

    threading.Thread(target=work, daemon=True, name=f"load {name}").start()
    return job


def find_job(name: str | None = None) -> LoadJob | None:
    """The latest load job of `name` in this process (running, loaded or failed), or None."""
    name = name or load_settings().model
    with _jobs_lock:
        return _jobs.get(name)
