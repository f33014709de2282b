"""The engine's small family of exceptions; each message says what to fix."""


class EngineError(Exception):
    """Base of every error the engine raises on purpose."""


class BadInput(EngineError):
    """Input from a user or a file that the engine cannot use (bad JSON, a bad schema, a bad name)."""


class TokenizerUnavailable(EngineError):
    """The tokenizer files could not be found or read."""


class ModelUnavailable(EngineError):
    """Model weights could not be loaded (not cached, offline, or a failed download)."""


class GenerationFailed(EngineError):
    """The model failed in the middle of a generation (out of memory, damaged weights); it stays loaded."""


class ModelFolderRefused(ModelUnavailable):
    """A model's name, or a file of its folder, refused before anything is read (too large, a link out of the folder,
    a name no folder or hub id can have)."""


class TemplateRefused(TokenizerUnavailable):
    """A model folder's chat template that cannot be used: past its time or memory limit (then it is not rendered
    again), or failing on a plain conversation when the model loads."""
