"""`python -m gangsched` is the `gangsched` command."""

from gangsched.cli import main

raise SystemExit(main())
