"""L3 discrete-event cluster simulator (no I/O): agg / xPyD instances, KV transfer, metrics."""

from pdplan.sim.api import collect, simulate, simulate_closed_loop, with_exact
from pdplan.sim.arrivals import Arrivals
from pdplan.sim.cluster import Simulator
from pdplan.sim.config import InstanceSpec, RoleSwitch, SimConfig, SwitchPolicy
from pdplan.sim.deploy import Pool, build_instances, parse_deployment
from pdplan.sim.kernel import EventLoop, SimulationError
from pdplan.sim.metrics import SimResult, percentiles

__all__ = [
    "Arrivals",
    "EventLoop",
    "InstanceSpec",
    "Pool",
    "RoleSwitch",
    "SimConfig",
    "SimResult",
    "SimulationError",
    "Simulator",
    "SwitchPolicy",
    "build_instances",
    "collect",
    "parse_deployment",
    "percentiles",
    "simulate",
    "simulate_closed_loop",
    "with_exact",
]
