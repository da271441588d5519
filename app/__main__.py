"""`python -m app`: until the page exists, runs the seed's experiment on the
embedded default model and prints its table (see engine/measure.py)."""

from engine.measure import main

if __name__ == "__main__":
    main(prog="python -m app")
