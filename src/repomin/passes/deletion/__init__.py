"""The learning deletion search the passes share: adaptive group testing over units.

``learning`` (the search), ``belief`` (how many units are needed), ``split`` (splitting a
rejected group), ``lockstep`` (several searches filling one batch) and ``chain`` (a
one-at-a-time search several proposals deep).
"""
