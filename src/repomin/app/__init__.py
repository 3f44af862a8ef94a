"""One reduction as a library call: options in, exported payload and report out.

``reduce`` (:func:`~repomin.app.reduce.execute`), the ``pipeline`` of stages, the payload
``gate`` (search, final test, backtrack), ``options``, ``selection`` of SRC, ``export``,
``diagnose``, persistent ``session``, ``progress`` and the report's ``execution`` block.
"""
