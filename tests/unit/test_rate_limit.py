"""The workaround for Snakemake's default job-submission limit in local runs
(:func:`attnbias.workflow.drop_default_rate_limit`), and a tripwire on the pinned Snakemake: the
scheduler code the workaround answers must still be there, else the workaround is stale."""

import inspect
from types import SimpleNamespace

from snakemake.scheduling.job_scheduler import JobRateLimiter, JobScheduler
from snakemake.settings.types import MaxJobsPerTimespan

from attnbias.workflow import DEFAULT_JOB_RATE, drop_default_rate_limit


def _workflow(rate="100/1s", local=True):
    limiter = JobRateLimiter(MaxJobsPerTimespan.parse_choice(rate)) if rate else None
    return SimpleNamespace(local_exec=local, scheduler=SimpleNamespace(job_rate_limiter=limiter))


def test_the_default_limit_is_dropped_in_a_local_run():
    wf = _workflow()
    assert drop_default_rate_limit(wf) is True
    assert wf.scheduler.job_rate_limiter is None


def test_a_limit_the_user_set_is_kept():
    for rate in ("50/1s", "100/2s", "10/1m"):
        wf = _workflow(rate)
        assert drop_default_rate_limit(wf) is False, rate
        assert wf.scheduler.job_rate_limiter is not None, rate


def test_a_cluster_run_keeps_the_default_limit():
    wf = _workflow(local=False)
    assert drop_default_rate_limit(wf) is False
    assert wf.scheduler.job_rate_limiter is not None


def test_no_limiter_or_no_scheduler_changes_nothing():
    assert drop_default_rate_limit(_workflow(rate=None)) is False
    assert drop_default_rate_limit(SimpleNamespace(local_exec=True)) is False


def test_the_pinned_snakemake_still_has_what_the_workaround_answers():
    """If an upgrade changes these, revisit the workaround (docs/performance.md): the default is
    100 jobs a second, and every round with ready jobs re-arms a timer of the limiter's timespan."""
    from snakemake.cli import get_argument_parser

    default = get_argument_parser().get_default("max_jobs_per_timespan")
    limit = MaxJobsPerTimespan.parse_choice(default)
    assert (limit.max_jobs, limit.timespan) == DEFAULT_JOB_RATE
    source = inspect.getsource(JobScheduler.schedule)
    assert "self._schedule_reevalutation(self.job_rate_limiter.timespan)" in source
    assert "self.job_rate_limiter is None" in inspect.getsource(JobScheduler.job_selector)
