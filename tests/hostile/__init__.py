"""A hostile class for `make grade`: honest students with every kind of mistake, and cheaters."""
