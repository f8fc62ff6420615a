# The release notebook, untouched: every solution cell still raises NotImplementedError.
# expect: test_memory_breakdown=0 test_live_memory=0 test_donated_update=0 test_donation_evidence=0 test_transfer_sweep=0 test_transfer_fit=0 test_cache_settings=0 test_cache_invalidation=0 test_remat_policies=0
# tier: nightly
