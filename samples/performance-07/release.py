# The release notebook, untouched: every solution cell still raises NotImplementedError.
# expect: test_roofline_point=0 test_classify=0 test_roof_verdict=0 test_hand_intensity=0
# tier: nightly
