"""Run the command line as ``python -m chatmem_cli``."""

from chatmem_cli import main

main()
