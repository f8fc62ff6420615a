# A loop that swallows KeyboardInterrupt: the kernel is killed, the rest is not run.
# reason: ignored the interrupt
# expect: test_workload=3 test_timer_first_call_apart=0 test_timer_synchronized=0 test_queued=0
# tier: nightly
# %% solutions
# %% replace timer
while True:
    try:
        time.sleep(0.5)
    except KeyboardInterrupt:
        pass
