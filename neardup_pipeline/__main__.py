"""`python -m neardup_pipeline` runs the `neardup` command."""

from .cli import main

raise SystemExit(main())
