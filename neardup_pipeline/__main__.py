"""`python -m neardup_pipeline` runs the `neardup` command."""

from neardup_pipeline.cli.main import main

raise SystemExit(main())
