"""``python -m tfrecord_io.cli``: the ``tfrecord-io`` command."""

import sys

from tfrecord_io.cli.main import main

sys.exit(main())
