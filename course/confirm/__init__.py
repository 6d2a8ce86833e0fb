"""Running exercises on cases given as plain data, and judging the results: the part of hidden
confirmation that needs neither the solutions nor the grader.

`harness.py` runs a list of cases on the student's code (torch only, so it can be copied alone
into a sandbox); `judge.py` compares the results with the reference's. The grader
(course/grading/, instructors only) draws secret cases and computes the reference there.
"""
