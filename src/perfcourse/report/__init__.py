"""The report stage: what grading wrote, read back for people after it.

`grade_table` prints the grade table after `perfcourse grade` and writes grades.csv;
`class_report` reads the class's results as data (the gradebook, the graded notebooks) and
`page` draws them as `perfcourse report`'s HTML page, its entry (`page.main`).
"""
