"""Role switching of instances (prefill <-> decode): drain, switch cost, policy ticks."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from pdplan.errors import ConfigError, PdplanError
from pdplan.sim._hosts import SimulatorHost
from pdplan.sim.checks import check_policy_interval, check_switch
from pdplan.sim.config import RoleSwitch
from pdplan.sim.kernel import PRIO_CONTROL, SimulationError

if TYPE_CHECKING:
    from pdplan.sim.engine import Instance

__all__ = ["MAX_FROZEN", "SwitchingMixin"]

MAX_FROZEN = 1000  # policy ticks with nothing in flight and no switch before a run is stuck


class SwitchingMixin(SimulatorHost):
    """Methods of Simulator: a switch drains the instance, takes it offline for
    switch_cost_s, then it rejoins the candidates in its new role. A switch asked for while
    another is under way on the instance waits for it (Simulator._pending_roles); asking
    again for the role it is already going to does nothing."""

    __slots__ = ()

    def _begin_switch(self, sw: RoleSwitch) -> None:
        inst = self.inst[sw.instance]
        if inst.role == "agg":
            return
        if self.finished + self.dropped >= self.n_issued_max:
            return  # every request is done: the run is over, a later switch does not happen
        if inst.draining or inst.offline:  # under way: the latest wish runs after it
            if sw.role == inst.next_role:
                self._pending_roles.pop(inst.idx, None)
            else:
                self._pending_roles[inst.idx] = sw.role
            return
        if inst.role == sw.role:
            return
        inst.draining, inst.next_role = True, sw.role
        inst.set_flags()
        self._refresh_candidates()
        if not inst.busy:
            self.check_drained(inst)

    def check_drained(self, inst: Instance) -> None:
        """Called by an idle draining instance: go offline for switch_cost_s once empty."""
        if not inst.draining:
            return
        if self._parked and inst.role == "prefill" and self._unpark_from(inst) and inst.pq:
            inst.kick()  # KV held for parked requests had blocked its queued prompts
            return
        if (
            inst.pq
            or inst.inbox
            or inst.jq
            or inst.ready
            or inst.inflight
            or inst.B
            or inst.kv_used
        ):
            return
        inst.draining, inst.offline = False, True
        inst.set_flags()
        self.loop.schedule(
            self.loop.now + self.cfg.switch_cost_s, PRIO_CONTROL, self._end_switch, inst
        )

    def _end_switch(self, inst: Instance) -> None:
        inst.offline = False
        inst.role = inst.next_role or inst.role
        inst.set_flags()
        if inst.cache is not None:  # its KV pool served the other role: nothing cached is left
            inst.cache.clear()
        inst.next_role = None
        self.switch_log.append((self.loop.now, inst.idx, inst.role))
        self._refresh_candidates()
        while self._unrouted and self.p_cands:
            self._route(self._unrouted.popleft())
        if self._parked:
            self._pair_parked()
        then = self._pending_roles.pop(inst.idx, None)  # asked for while this one ran
        if then is not None and then != inst.role:
            self._begin_switch(RoleSwitch(self.loop.now, inst.idx, then))

    def _policy_tick(self, _: object) -> None:
        pol = self.cfg.policy
        assert pol is not None
        parked = Counter(self.req.p_inst[x] for x in self._parked)  # prefill instance -> n
        view = [self._view(i, parked[i.idx]) for i in self.inst]
        decided = self._decide_switches(view)
        before = self._switch_state()
        for sw in decided:
            self._begin_switch(sw)
        acted = self._switch_state() != before  # a switch began or a wish changed (not a
        # policy that re-states the roles it has, which changes nothing)
        # nothing in flight and the policy did nothing: a cluster left without a role waits
        # for it; after MAX_FROZEN ticks it is taken as stuck and the run ends (its requests
        # are reported unfinished) rather than ticking forever
        self._frozen_ticks = 0 if acted or not self._frozen() else self._frozen_ticks + 1
        if self.finished + self.dropped < self.n_issued_max and self._frozen_ticks < MAX_FROZEN:
            dt = check_policy_interval(pol, f" (changed by the policy at {self.loop.now:g} s)")
            self.loop.schedule(self.loop.now + dt, PRIO_CONTROL, self._policy_tick, None)

    def _view(self, i: Instance, parked: int) -> dict[str, float | int | str]:
        """What the policy sees of instance i (SwitchPolicy's keys), counted as the timeline
        counts (SampleMixin.sample): a prompt being prefilled is running on a prefill
        instance, not waiting (it was counted waiting, and running was 0 there). running adds
        `ready`, the requests whose KV has arrived and join the batch at the next step
        boundary: the event-skipping mode joins them at once (LazyJoinMixin.deliver), exact
        mode at the boundary, so B alone read one higher in one mode than the other.
        `parked` (requests prefilled here with no decode instance to go to, their KV held
        here) and `unrouted` (prompts, cluster-wide, that arrived with no prefill instance)
        are in no queue, so neither waiting nor running counts them."""
        pf = i.prefilling
        return {
            "role": i.role,
            "queued_tokens": sum(self.req.todo[x] for x in i.pq),  # prompt tokens to prefill
            "waiting": max(0, len(i.pq) - pf) + len(i.inbox) + len(i.jq),
            "running": i.B + len(i.ready) + (pf if i.role == "prefill" else 0),
            "outstanding_tokens": i.outstanding,
            "draining": int(i.draining or i.offline),
            "next_role": i.next_role or "",  # the role a pending switch goes to, '' for none
            "kv_used_tokens": i.kv_now(self.loop.now),  # KV in use, tokens (timeline's kv)
            "kv_capacity_tokens": i.cap,
            "parked": parked,  # prefilled here, waiting for a decode instance (KV held here)
            "unrouted": len(self._unrouted),  # cluster-wide: waiting for a prefill instance
        }

    def _decide_switches(self, view: list[dict[str, float | int | str]]) -> list:
        """The policy's switches for now, checked: a list of RoleSwitch (None: none)."""
        pol = self.cfg.policy
        assert pol is not None
        try:
            decided = pol.decide(self.loop.now, view)
        except PdplanError:
            raise
        except Exception as exc:  # the user's policy failed: say so, keep its traceback
            raise SimulationError(
                f"the switch policy's decide() raised {type(exc).__name__}: {exc}"
            ) from exc
        if decided is None:
            return []
        if not isinstance(decided, list | tuple) or not all(
            isinstance(sw, RoleSwitch) for sw in decided
        ):
            raise ConfigError(
                f"the switch policy's decide() must return a list of RoleSwitch, got {decided!r}"
            )
        for sw in decided:
            check_switch(sw, len(self.inst), "the policy's")
        return list(decided)

    def _switch_state(self) -> tuple:
        """What a policy's switches can change: each instance's drain / target role, and the
        roles asked for while a switch is under way."""
        roles = tuple((i.draining, i.offline, i.next_role) for i in self.inst)
        return roles, tuple(sorted(self._pending_roles.items()))

    def _frozen(self) -> bool:
        """No instance busy and no event pending but the policy's and the sampler's ticks."""
        ticks = (self._policy_tick, self._sample_tick)
        return not any(i.busy for i in self.inst) and all(e[3] in ticks for e in self.loop.heap)
