"""Rodinia CFD: the Euler 3-D unstructured finite-volume solver (euler3d).

Rodinia 3.1, ``cfd/euler3d.cu`` (Corrigan et al., "Running unstructured
grid CFD solvers on modern graphics hardware", AIAA 2009-4001).  Each cell
holds five conserved variables (density, momentum x/y/z, density-energy)
and up to NNB = 4 faces, each with a neighbour index (>= 0 a cell, -1 a
wing boundary, -2 the far field) and an area-weighted normal.  Every
iteration copies the variables, computes each cell's step factor
``0.5 / (sqrt(area) (|v| + c))`` (``compute_step_factor``) and takes RK = 3
Runge-Kutta stages, each a ``compute_flux`` (central flux plus artificial
viscosity over the faces, pressure on wing faces, the far-field state on
far-field faces) then a ``time_step``
``variables = old + step_factor / (RK + 1 - stage) * flux``.
Layouts are Rodinia's structure-of-arrays: ``variables[var, cell]``,
``neighbours[face, cell]``, ``normals[dim, face, cell]``.

Deviations: ITERATIONS (2) replaces Rodinia's 2000 (a program-level loop
unrolls into a chain of nodes); the mesh is synthetic (see make_inputs):
a rows x cols grid of cells stored as neighbour lists, periodic west/east,
wing faces along the first row and far-field faces along the last, normals
perturbed at random; the initial state is the far field (Mach 1.2, angle
of attack 0, as Rodinia) with a 1 % random perturbation, since a uniform
far-field state has nearly zero flux.  The far-field values, computed on
the host in Rodinia, are inputs (``ff_variable``, ``ff_flux``).
"""
import numba
import numpy as np

import hpvm.lang as hl
from hpvm.lang import (
    Buffer, InOut, buffer, f32, i32, parallel_loop, private_array, sqrt,
)

from benchmarks.peers import numba_peer
from benchmarks.suite import Benchmark

GAMMA = 1.4
SMOOTHING = 0.2
RK = 3
ITERATIONS = 2
NVAR, NNB, NDIM = 5, 4, 3
MACH = 1.2
GRID = {"small": (16, 32), "large": (512, 512)}   # Rodinia's meshes: 97K to 233K cells


@hl.kernel
def pressure(density: f32, density_energy: f32, speed_sqd: f32) -> f32:
    return (GAMMA - 1.0) * (density_energy - 0.5 * density * speed_sqd)


@hl.kernel
def speed_of_sound(density: f32, pressure: f32) -> f32:
    return sqrt(GAMMA * pressure / density)


@hl.program
def cfd(variables: InOut[Buffer[f32, NVAR, "N"]], areas: Buffer[f32, "N"],
        neighbours: Buffer[i32, NNB, "N"], normals: Buffer[f32, NDIM, NNB, "N"],
        ff_variable: Buffer[f32, NVAR], ff_flux: Buffer[f32, 4, NDIM]):
    old_variables = buffer(f32, (NVAR, "N"))
    step_factors = buffer(f32, ("N",))
    fluxes = buffer(f32, (NVAR, "N"))
    for iteration in range(ITERATIONS):
        for i in parallel_loop(N, ins=(variables,), outs=(old_variables,), name="copy"):
            for v in range(NVAR):
                old_variables[v, i] = variables[v, i]
        for i in parallel_loop(N, ins=(variables, areas), outs=(step_factors,),
                               name="compute_step_factor"):
            density = variables[0, i]
            speed_sqd: f32 = 0.0
            for d in range(NDIM):
                velocity = variables[1 + d, i] / density
                speed_sqd += velocity * velocity
            sound = speed_of_sound(density, pressure(density, variables[4, i], speed_sqd))
            step_factors[i] = 0.5 / (sqrt(areas[i]) * (sqrt(speed_sqd) + sound))
        for stage in range(RK):
            for i in parallel_loop(N, ins=(variables, neighbours, normals, ff_variable, ff_flux),
                                   outs=(fluxes,), name="compute_flux"):
                # per cell: [0..2] momentum, [3..5] velocity of this cell and a neighbour
                cell = private_array(f32, (6,))
                other = private_array(f32, (6,))
                flux = private_array(f32, (NVAR,))
                density_i = variables[0, i]
                density_energy_i = variables[4, i]
                speed_sqd_i: f32 = 0.0
                for d in range(NDIM):
                    cell[d] = variables[1 + d, i]
                    cell[3 + d] = cell[d] / density_i
                    speed_sqd_i += cell[3 + d] * cell[3 + d]
                speed_i = sqrt(speed_sqd_i)
                pressure_i = pressure(density_i, density_energy_i, speed_sqd_i)
                sound_i = speed_of_sound(density_i, pressure_i)
                for face in range(NNB):
                    nb = neighbours[face, i]
                    normal_len = sqrt(normals[0, face, i] * normals[0, face, i]
                                      + normals[1, face, i] * normals[1, face, i]
                                      + normals[2, face, i] * normals[2, face, i])
                    if nb >= 0:
                        density_nb = variables[0, nb]
                        density_energy_nb = variables[4, nb]
                        speed_sqd_nb: f32 = 0.0
                        for d in range(NDIM):
                            other[d] = variables[1 + d, nb]
                            other[3 + d] = other[d] / density_nb
                            speed_sqd_nb += other[3 + d] * other[3 + d]
                        pressure_nb = pressure(density_nb, density_energy_nb, speed_sqd_nb)
                        sound_nb = speed_of_sound(density_nb, pressure_nb)
                        # artificial viscosity
                        factor = -normal_len * SMOOTHING * 0.5 * (
                            speed_i + sqrt(speed_sqd_nb) + sound_i + sound_nb)
                        flux[0] += factor * (density_i - density_nb)
                        flux[4] += factor * (density_energy_i - density_energy_nb)
                        for a in range(NDIM):
                            flux[1 + a] += factor * (cell[a] - other[a])
                        # central flux: fc_momentum_a[d] = v[min(a,d)] m[max(a,d)] (+ p if a == d)
                        for d in range(NDIM):
                            factor = 0.5 * normals[d, face, i]
                            flux[0] += factor * (other[d] + cell[d])
                            flux[4] += factor * (other[3 + d] * (density_energy_nb + pressure_nb)
                                                 + cell[3 + d] * (density_energy_i + pressure_i))
                            for a in range(NDIM):
                                low, high = min(a, d), max(a, d)
                                fc_nb = other[3 + low] * other[high]
                                fc_i = cell[3 + low] * cell[high]
                                if a == d:
                                    fc_nb += pressure_nb
                                    fc_i += pressure_i
                                flux[1 + a] += factor * (fc_nb + fc_i)
                    elif nb == -1:   # wing boundary
                        for a in range(NDIM):
                            flux[1 + a] += normals[a, face, i] * pressure_i
                    elif nb == -2:   # far field
                        for d in range(NDIM):
                            factor = 0.5 * normals[d, face, i]
                            flux[0] += factor * (ff_variable[1 + d] + cell[d])
                            flux[4] += factor * (ff_flux[3, d]
                                                 + cell[3 + d] * (density_energy_i + pressure_i))
                            for a in range(NDIM):
                                low, high = min(a, d), max(a, d)
                                fc_i = cell[3 + low] * cell[high]
                                if a == d:
                                    fc_i += pressure_i
                                flux[1 + a] += factor * (ff_flux[a, d] + fc_i)
                for v in range(NVAR):
                    fluxes[v, i] = flux[v]
            for i in parallel_loop(N, ins=(old_variables, step_factors, fluxes), outs=(variables,),
                                   name="time_step"):
                factor = step_factors[i] / (RK + 1 - stage)
                for v in range(NVAR):
                    variables[v, i] = old_variables[v, i] + factor * fluxes[v, i]


def far_field() -> tuple[np.ndarray, np.ndarray]:
    """Rodinia's host set-up: the far-field variables and flux contributions
    (rows momentum x, y, z, density-energy; columns x, y, z), f32."""
    density, ff_pressure = 1.4, 1.0
    speed = MACH * np.sqrt(GAMMA * ff_pressure / density)
    velocity = np.array([speed, 0.0, 0.0])          # angle of attack 0
    momentum = density * velocity
    density_energy = density * 0.5 * speed * speed + ff_pressure / (GAMMA - 1)
    variable = np.concatenate([[density], momentum, [density_energy]])
    return variable.astype(np.float32), flux_contribution(
        momentum, velocity, density_energy, ff_pressure).astype(np.float32)


def flux_contribution(momentum, velocity, density_energy, pressure) -> np.ndarray:
    """Rodinia's compute_flux_contribution: ``[..., 4, 3]`` (rows momentum
    x, y, z, density-energy) for arrays whose last axis is x, y, z."""
    momentum_rows = velocity[..., None, :] * momentum[..., :, None]
    momentum_rows = momentum_rows + np.eye(3) * np.asarray(pressure)[..., None, None]
    energy_row = velocity * (np.asarray(density_energy) + pressure)[..., None]
    return np.concatenate([momentum_rows, energy_row[..., None, :]], axis=-2)


def synthetic_mesh(rows: int, cols: int, rng: np.random.Generator):
    """``(areas, neighbours, normals)`` of a rows x cols grid of cells with
    faces west, east, north, south; opposite faces carry opposite normals."""
    cells = np.arange(rows * cols).reshape(rows, cols)
    west, east = np.roll(cells, 1, axis=1), np.roll(cells, -1, axis=1)
    north, south = np.roll(cells, 1, axis=0), np.roll(cells, -1, axis=0)
    north[0], south[-1] = -1, -2                       # wing above, far field below
    neighbours = np.stack([west, east, north, south]).reshape(NNB, -1).astype(np.int32)

    def perturbed(direction):
        return np.asarray(direction, dtype=np.float64)[:, None, None] + rng.normal(
            0, 0.1, size=(3, rows, cols))
    east_normal, south_normal = perturbed([1, 0, 0]), perturbed([0, 1, 0])
    west_normal = -np.roll(east_normal, 1, axis=2)
    north_normal = -np.roll(south_normal, 1, axis=1)
    north_normal[:, 0] = perturbed([0, -1, 0])[:, 0]
    normals = np.stack([west_normal, east_normal, north_normal, south_normal], axis=1)
    areas = rng.uniform(0.8, 1.2, size=rows * cols)
    return (areas.astype(np.float32), neighbours,
            normals.reshape(NDIM, NNB, -1).astype(np.float32))


def make_inputs(size: str, rng: np.random.Generator) -> dict:
    areas, neighbours, normals = synthetic_mesh(*GRID[size], rng)
    ff_variable, ff_flux = far_field()
    variables = ff_variable[:, None] * (1 + rng.uniform(-0.01, 0.01, size=(NVAR, areas.size)))
    variables[1:4] += rng.uniform(-0.01, 0.01, size=(3, areas.size))
    return {"variables": variables.astype(np.float32), "areas": areas, "neighbours": neighbours,
            "normals": normals, "ff_variable": ff_variable, "ff_flux": ff_flux}


def _state(variables):
    """``(density, momentum[N, 3], density_energy, velocity, pressure,
    speed_sqd, speed_of_sound)`` of variables[5, N]."""
    density, momentum, density_energy = variables[0], variables[1:4].T, variables[4]
    velocity = momentum / density[:, None]
    speed_sqd = (velocity ** 2).sum(axis=1)
    pressure_ = (GAMMA - 1) * (density_energy - 0.5 * density * speed_sqd)
    sound = np.sqrt(GAMMA * pressure_ / density)
    return density, momentum, density_energy, velocity, pressure_, speed_sqd, sound


def _flux(variables, neighbours, normals, ff_variable, ff_flux):
    density, momentum, energy, velocity, pressure_, speed_sqd, sound = _state(variables)
    contribution = flux_contribution(momentum, velocity, energy, pressure_)   # [N, 4, 3]
    flux = np.zeros((variables.shape[1], NVAR))
    for face in range(NNB):
        nb = neighbours[face]
        normal = normals[:, face].T                                           # [N, 3]
        inner, wing, far = nb >= 0, nb == -1, nb == -2
        other = np.where(inner, nb, 0)
        o_density, o_momentum, o_energy, o_velocity, o_pressure, o_speed_sqd, o_sound = (
            value[other] for value in (density, momentum, energy, velocity, pressure_, speed_sqd,
                                       sound))
        o_contribution = contribution[other]
        viscosity = -np.linalg.norm(normal, axis=1) * SMOOTHING * 0.5 * (
            np.sqrt(speed_sqd) + np.sqrt(o_speed_sqd) + sound + o_sound)
        state = np.column_stack([density, momentum, energy])
        o_state = np.column_stack([o_density, o_momentum, o_energy])
        inner_flux = viscosity[:, None] * (state - o_state)
        central = 0.5 * np.einsum("nd,nrd->nr", normal, contribution + o_contribution)
        inner_flux[:, 0] += 0.5 * np.einsum("nd,nd->n", normal, momentum + o_momentum)
        inner_flux[:, 1:] += central
        wing_flux = np.zeros_like(flux)
        wing_flux[:, 1:4] = normal * pressure_[:, None]
        far_flux = np.zeros_like(flux)
        far_flux[:, 0] = 0.5 * np.einsum("nd,nd->n", normal, momentum + ff_variable[1:4])
        far_flux[:, 1:] = 0.5 * np.einsum("nd,nrd->nr", normal, contribution + ff_flux)
        flux += np.where(inner[:, None], inner_flux, 0) + np.where(wing[:, None], wing_flux, 0) \
            + np.where(far[:, None], far_flux, 0)
    return flux.T


def reference(inputs: dict) -> dict:
    """numpy, vectorised over cells, in float64."""
    x = {name: np.asarray(value, dtype=np.float64) if value.dtype.kind == "f" else value
         for name, value in inputs.items()}
    variables = x["variables"]
    for _ in range(ITERATIONS):
        old = variables
        _, _, _, _, _, speed_sqd, sound = _state(variables)
        step_factors = 0.5 / (np.sqrt(x["areas"]) * (np.sqrt(speed_sqd) + sound))
        for stage in range(RK):
            flux = _flux(variables, x["neighbours"], x["normals"], x["ff_variable"], x["ff_flux"])
            variables = old + step_factors / (RK + 1 - stage) * flux
    return {"variables": variables.astype(np.float32)}


# f32 constants keep the numba peer's arithmetic in f32 (a Python float
# would promote it to f64)
_HALF, _GAMMA, _SMOOTHING = np.float32(0.5), np.float32(GAMMA), np.float32(SMOOTHING)


@numba.njit
def _cell_state(variables, cell):
    """density, momentum, density-energy, velocity, speed^2, pressure, c."""
    density, energy = variables[0, cell], variables[4, cell]
    mx, my, mz = variables[1, cell], variables[2, cell], variables[3, cell]
    vx, vy, vz = mx / density, my / density, mz / density
    speed_sqd = vx * vx + vy * vy + vz * vz
    pressure_ = (_GAMMA - np.float32(1)) * (energy - _HALF * density * speed_sqd)
    sound = np.sqrt(_GAMMA * pressure_ / density)
    return density, (mx, my, mz), energy, (vx, vy, vz), speed_sqd, pressure_, sound


@numba.njit
def _contribution(momentum, velocity, energy, pressure_):
    """Rodinia's compute_flux_contribution as rows x, y, z, energy."""
    (mx, my, mz), (vx, vy, vz) = momentum, velocity
    de_p = energy + pressure_
    return ((vx * mx + pressure_, vx * my, vx * mz),
            (vx * my, vy * my + pressure_, vy * mz),
            (vx * mz, vy * mz, vz * mz + pressure_),
            (vx * de_p, vy * de_p, vz * de_p))


@numba.njit
def _dot_half(normal, a, b):
    """sum_d 0.5 n_d (a_d + b_d), accumulated over d in order."""
    total = np.float32(0)
    for d in range(3):
        total += _HALF * normal[d] * (a[d] + b[d])
    return total


@numba.njit(parallel=True)
def _flux_numba(variables, neighbours, normals, ff_variable, ff_contribution, fluxes):
    for i in numba.prange(variables.shape[1]):
        density, momentum, energy, velocity, speed_sqd, pressure_, sound = _cell_state(variables, i)
        speed = np.sqrt(speed_sqd)
        contribution = _contribution(momentum, velocity, energy, pressure_)
        mass = momentum_x = momentum_y = momentum_z = heat = np.float32(0)
        for face in range(NNB):
            nb = neighbours[face, i]
            normal = (normals[0, face, i], normals[1, face, i], normals[2, face, i])
            normal_len = np.sqrt(normal[0] ** 2 + normal[1] ** 2 + normal[2] ** 2)
            if nb >= 0:
                o_density, o_momentum, o_energy, o_velocity, o_speed_sqd, o_pressure, o_sound = (
                    _cell_state(variables, nb))
                o_contribution = _contribution(o_momentum, o_velocity, o_energy, o_pressure)
                factor = -normal_len * _SMOOTHING * _HALF * (speed + np.sqrt(o_speed_sqd)
                                                            + sound + o_sound)
                mass += factor * (density - o_density) + _dot_half(normal, o_momentum, momentum)
                momentum_x += factor * (momentum[0] - o_momentum[0]) + _dot_half(
                    normal, o_contribution[0], contribution[0])
                momentum_y += factor * (momentum[1] - o_momentum[1]) + _dot_half(
                    normal, o_contribution[1], contribution[1])
                momentum_z += factor * (momentum[2] - o_momentum[2]) + _dot_half(
                    normal, o_contribution[2], contribution[2])
                heat += factor * (energy - o_energy) + _dot_half(
                    normal, o_contribution[3], contribution[3])
            elif nb == -1:
                momentum_x += normal[0] * pressure_
                momentum_y += normal[1] * pressure_
                momentum_z += normal[2] * pressure_
            elif nb == -2:
                mass += _dot_half(normal, ff_variable[1:4], momentum)
                momentum_x += _dot_half(normal, ff_contribution[0], contribution[0])
                momentum_y += _dot_half(normal, ff_contribution[1], contribution[1])
                momentum_z += _dot_half(normal, ff_contribution[2], contribution[2])
                heat += _dot_half(normal, ff_contribution[3], contribution[3])
        fluxes[0, i], fluxes[1, i], fluxes[2, i] = mass, momentum_x, momentum_y
        fluxes[3, i], fluxes[4, i] = momentum_z, heat


@numba.njit(parallel=True)
def _step_factors_numba(variables, areas, step_factors):
    for i in numba.prange(variables.shape[1]):
        _, _, _, _, speed_sqd, _, sound = _cell_state(variables, i)
        step_factors[i] = _HALF / (np.sqrt(areas[i]) * (np.sqrt(speed_sqd) + sound))


@numba.njit(parallel=True)
def _time_step_numba(stage, old_variables, step_factors, fluxes, variables):
    for i in numba.prange(variables.shape[1]):
        factor = step_factors[i] / np.float32(RK + 1 - stage)
        for v in range(NVAR):
            variables[v, i] = old_variables[v, i] + factor * fluxes[v, i]


def _run_numba(inputs: dict) -> dict:
    """Rodinia's host loop over the three numba kernels."""
    variables = inputs["variables"].copy()
    step_factors = np.empty_like(inputs["areas"])
    fluxes = np.empty_like(variables)
    for _ in range(ITERATIONS):
        old_variables = variables.copy()
        _step_factors_numba(variables, inputs["areas"], step_factors)
        for stage in range(RK):
            _flux_numba(variables, inputs["neighbours"], inputs["normals"], inputs["ff_variable"],
                        inputs["ff_flux"], fluxes)
            _time_step_numba(stage, old_variables, step_factors, fluxes, variables)
    return {"variables": variables}


BENCHMARKS = [Benchmark(
    name="cfd", suite="rodinia", program=cfd, make_inputs=make_inputs, reference=reference,
    # f32 against a float64 reference: each of the 6 RK stages sums ~100
    # terms of size ~1 per cell in f32; errors stay near 1e-6 relative.
    rtol=1e-4, atol=1e-5,
    peers=(numba_peer(_run_numba),),
    description=f"Euler 3-D finite volumes, {ITERATIONS} iterations of {RK} RK stages")]
