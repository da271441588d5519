"""The engine's one error type for bad requests: a ValueError that names the
parameter at fault, so an API edge can say which field to fix."""


class ParamError(ValueError):
    def __init__(self, param: str, message: str):
        super().__init__(message)
        self.param = param
