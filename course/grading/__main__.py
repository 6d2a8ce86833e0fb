"""`make grade`: see course/grading/cli.py and docs/instructors.md."""
import sys

from course.grading.cli import main

if __name__ == "__main__":
    sys.exit(main())
