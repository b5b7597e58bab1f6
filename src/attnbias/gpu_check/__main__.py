"""``python -m attnbias.gpu_check``: the GPU check (:func:`attnbias.gpu_check.cli.main`)."""

import sys

from attnbias.gpu_check.cli import main

sys.exit(main())
