"""Data: synthetic generators (:mod:`.synthetic`) and, later, real dataset loaders."""

from .synthetic import TokenProblem, d3_problem, random_sphere_trials, sphere

__all__ = ["TokenProblem", "d3_problem", "random_sphere_trials", "sphere"]
