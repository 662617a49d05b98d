"""``python -m voirdire`` runs the command-line interface."""

from voirdire.cli import main

if __name__ == "__main__":
    main()
