"""An independent, hand-written Python implementation of docs/tcg-rules.md (the Creature TCG).

It reads only the rules document and the card data files; it shares no code with envc. Use:

    game = new_game(RandomChance(seed))      # init (5.1 to 5.4)
    mask = legal_mask(game)                  # 7.1
    step(game, action_id, chance)            # mutates `game`; `game.rewards`, `.terminated`, `.truncated`
    observe(game, p), engine_state(game)     # sections 14 and 15
"""

from .cards import CardPool, load_pool
from .chance import Chance, ChanceMismatch, RandomChance, ScriptedChance
from .layout import ACTIONS, NUM_ACTIONS, Action, ActionKind
from .rules import IllegalAction, is_legal, legal_mask, new_game, step
from .state import Cond, Creature, Game, Phase, Player, WinReason
from .views import engine_state, game_from_engine_state, observe

__all__ = [
    "ACTIONS",
    "NUM_ACTIONS",
    "Action",
    "ActionKind",
    "CardPool",
    "Chance",
    "ChanceMismatch",
    "Cond",
    "Creature",
    "Game",
    "IllegalAction",
    "Phase",
    "Player",
    "RandomChance",
    "ScriptedChance",
    "WinReason",
    "engine_state",
    "game_from_engine_state",
    "is_legal",
    "legal_mask",
    "load_pool",
    "new_game",
    "observe",
    "step",
]
