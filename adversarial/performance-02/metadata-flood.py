# A notebook whose metadata holds five million empty JSON objects (15 MB of `{}`, under the
# 16 MiB a notebook file may hold). Parsed by nbformat in `perfcourse grade`'s own process, before
# any size check, 18 MB of them took 3.1 GB and 13.6 s and were accepted. The notebook is now
# bounded before it is parsed and parsed in a bounded child process, which stops at the
# 100,000th object: refused in well under a second, the grader's process parsing nothing.
# reason: JSON objects
# expect: not-graded
# %% file pad 5000000
