# The end of a run: hooks Snakemake calls once its run is over (not in cluster jobs, which run
# with --no-hooks).
import threading


def cancel_rescheduling_timers():
    """Let Snakemake exit as soon as its run is over.  Snakemake 9's scheduler starts, in every
    scheduling round, a non-daemon ``threading.Timer`` of the ``--max-jobs-per-timespan`` span
    (1 s by default) that wakes it up again; the process then waits for the last one before
    exiting: a second lost per run (measured with strace on Snakemake 9.27.1).  Called once the
    run has ended (onsuccess/onerror below), when nothing is left to schedule.
    """
    for t in threading.enumerate():
        if isinstance(t, threading.Timer) and "_schedule_reevalutation" in getattr(
            t.function, "__qualname__", ""
        ):
            t.cancel()


onsuccess:
    cancel_rescheduling_timers()


onerror:
    cancel_rescheduling_timers()
