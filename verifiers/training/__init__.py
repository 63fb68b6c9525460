"""RL maths for training on environment rollouts: group-relative advantages, the IcePop-style masked
importance-sampling loss (NumPy, and torch when installed), online difficulty filtering and an off-policy
buffer. The prime-rl adapter lives in ``verifiers.training.prime_rl``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from verifiers._exports import lazy_exports

_EXPORTS: dict[str, str] = {
    "group_advantages": "verifiers.training.advantages",
    "IcePopResult": "verifiers.training.icepop",
    "icepop_loss": "verifiers.training.icepop",
    "IcePopTorchResult": "verifiers.training.icepop_torch",
    "icepop_loss_torch": "verifiers.training.icepop_torch",
    "DifficultyPools": "verifiers.training.filtering",
    "Pool": "verifiers.training.filtering",
    "is_informative": "verifiers.training.filtering",
    "OffPolicyBuffer": "verifiers.training.buffer",
    "Stamped": "verifiers.training.buffer",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names, for type checkers and IDEs
    from verifiers.training.advantages import group_advantages as group_advantages
    from verifiers.training.buffer import OffPolicyBuffer as OffPolicyBuffer, Stamped as Stamped
    from verifiers.training.filtering import (
        DifficultyPools as DifficultyPools,
        Pool as Pool,
        is_informative as is_informative,
    )
    from verifiers.training.icepop import IcePopResult as IcePopResult, icepop_loss as icepop_loss
    from verifiers.training.icepop_torch import (
        IcePopTorchResult as IcePopTorchResult,
        icepop_loss_torch as icepop_loss_torch,
    )
