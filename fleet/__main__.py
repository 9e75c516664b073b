"""`python -m fleet` is the same as the `fleet` console script."""

from fleet.cli import main

raise SystemExit(main())
