"""The web edge of Word Factory: parses requests, hands them to engine/, and
turns engine events into wire messages. (The page and its WebSocket come with
the page issue; for now the package only offers `python -m app`.)"""
