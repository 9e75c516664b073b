"""bf16 matrix products with the cuBLASLt epilogues PyTorch does not expose, for the fused MLP.

PyTorch's matmuls write their output and leave GELU and its derivative to separate elementwise kernels, which at
GPT-2's MLP width move ~2 GB per layer and micro-batch. cuBLASLt can apply bias + GELU while the product is still
in registers (keeping GELU's input for backward: ``GELU_AUX_BIAS``), and multiply a product by GELU's derivative
(``DGELU``), as llm.c does. Called through ctypes on the cuBLASLt library PyTorch has already loaded, on PyTorch's
current stream: nothing to build or install.

cuBLASLt is column-major: a row-major [rows, cols] tensor is its [cols, rows] transpose, so a row-major
``out = left @ right`` is computed as the column-major ``out.T = right.T @ left.T`` (``plan``).
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass

import torch

DEFAULT = 1
"""out = product."""
GELU_AUX = 160
"""out = gelu(product), with product also written to ``aux`` (tanh approximation of GELU)."""
GELU_AUX_BIAS = 164
"""out = gelu(product + bias), with product + bias also written to ``aux`` (tanh approximation of GELU)."""
DGELU = 192
"""out = product * gelu'(aux). (``DGELU_BGRAD``, which also sums the bias gradient, ran as a separate unfused
epilogue kernel on an H200 and took 3.7x the plain product; ``benchmarks/TRAINING.md``.)"""

_OP_N, _OP_T = 0, 1
_BF16, _FP32 = 14, 0  # cudaDataType
_COMPUTE_32F = 68  # cublasComputeType
_DESC_TRANSA, _DESC_TRANSB, _DESC_EPILOGUE, _DESC_BIAS_POINTER = 3, 4, 7, 8
_DESC_AUX_POINTER, _DESC_AUX_LD = 11, 12
_PREF_MAX_WORKSPACE_BYTES = 1
_WORKSPACE_BYTES = 32 << 20
_CANDIDATES = 8  # algorithms asked of the heuristics, each timed on first use
_TIMED_RUNS = 3
_ALIGNMENT = 256  # the alignment cuBLASLt's heuristics assume for every matrix pointer by default


@dataclass(frozen=True)
class Plan:
    """cuBLASLt's column-major view of the row-major product out[rows, cols] = left[rows, inner] @ right.

    ``right`` is [inner, cols], or [cols, inner] used transposed (a weight, as nn.Linear keeps it); ``left`` is
    [rows, inner], or [inner, rows] used transposed (an output gradient, for a weight's gradient). Each layout is
    (rows, cols, leading dimension) of the column-major matrix that the row-major tensor's memory is.
    """

    transa: int
    transb: int
    a: tuple[int, int, int]
    b: tuple[int, int, int]
    d: tuple[int, int, int]


def plan(rows: int, inner: int, cols: int, right_transposed: bool, left_transposed: bool = False) -> Plan:
    """The column-major product D = op(A) @ op(B) with A = right's memory, B = left's memory, D = out's memory."""
    a = (inner, cols, inner) if right_transposed else (cols, inner, cols)
    b = (rows, inner, rows) if left_transposed else (inner, rows, inner)
    return Plan(
        transa=_OP_T if right_transposed else _OP_N,
        transb=_OP_T if left_transposed else _OP_N,
        a=a,
        b=b,
        d=(cols, rows, cols),
    )


class _HeuristicResult(ctypes.Structure):
    _fields_ = [
        ("algo", ctypes.c_uint64 * 8),
        ("workspace_size", ctypes.c_size_t),
        ("state", ctypes.c_int),
        ("waves_count", ctypes.c_float),
        ("reserved", ctypes.c_int * 4),
    ]


def _loaded_library() -> ctypes.CDLL:
    """The libcublasLt that PyTorch's CUDA build loaded (so versions match), found in this process's mappings."""
    torch.cuda.init()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if "libcublasLt.so" in path:
                return ctypes.CDLL(path)
    raise RuntimeError("PyTorch has not loaded libcublasLt; the fused MLP needs a CUDA build of PyTorch")


class _CublasLt:
    """One cuBLASLt handle, a workspace per device, and a prepared descriptor + algorithm per (epilogue, shape)."""

    def __init__(self) -> None:
        self.lib = _loaded_library()
        self.handle = ctypes.c_void_p()
        self._check("cublasLtCreate", ctypes.byref(self.handle))
        self.workspaces: dict[int, torch.Tensor] = {}
        self.prepared: dict[tuple, tuple] = {}
        self.lock = threading.Lock()

    def _check(self, name: str, *args) -> None:
        status = getattr(self.lib, name)(*args)
        if status != 0:
            raise RuntimeError(f"{name} failed with cuBLAS status {status}")

    def _set(self, setter: str, target: ctypes.c_void_p, attribute: int, value) -> None:
        self._check(setter, target, attribute, ctypes.byref(value), ctypes.c_size_t(ctypes.sizeof(value)))

    def _layout(self, rows: int, cols: int, ld: int) -> ctypes.c_void_p:
        layout = ctypes.c_void_p()
        self._check(
            "cublasLtMatrixLayoutCreate",
            ctypes.byref(layout),
            _BF16,
            ctypes.c_uint64(rows),
            ctypes.c_uint64(cols),
            ctypes.c_int64(ld),
        )
        return layout

    def _prepare(
        self, shape: Plan, epilogue: int, bias: int, aux: int, device: int, candidates: int = _CANDIDATES
    ) -> tuple:
        """The descriptor, layouts and up to ``candidates`` algorithms cuBLASLt's heuristics propose (best guess
        first)."""
        desc = ctypes.c_void_p()
        self._check("cublasLtMatmulDescCreate", ctypes.byref(desc), _COMPUTE_32F, _FP32)
        set_desc = "cublasLtMatmulDescSetAttribute"
        self._set(set_desc, desc, _DESC_TRANSA, ctypes.c_int32(shape.transa))
        self._set(set_desc, desc, _DESC_TRANSB, ctypes.c_int32(shape.transb))
        self._set(set_desc, desc, _DESC_EPILOGUE, ctypes.c_int32(epilogue))
        self._set(set_desc, desc, _DESC_AUX_LD, ctypes.c_int64(shape.d[2]))
        self._set(set_desc, desc, _DESC_BIAS_POINTER, ctypes.c_void_p(bias))
        self._set(set_desc, desc, _DESC_AUX_POINTER, ctypes.c_void_p(aux))
        layouts = (self._layout(*shape.a), self._layout(*shape.b), self._layout(*shape.d))
        preference = ctypes.c_void_p()
        self._check("cublasLtMatmulPreferenceCreate", ctypes.byref(preference))
        self._set(
            "cublasLtMatmulPreferenceSetAttribute",
            preference,
            _PREF_MAX_WORKSPACE_BYTES,
            ctypes.c_uint64(_WORKSPACE_BYTES),
        )
        results, found = (_HeuristicResult * candidates)(), ctypes.c_int(0)
        a_layout, b_layout, d_layout = layouts
        try:
            self._check(
                "cublasLtMatmulAlgoGetHeuristic",
                self.handle,
                desc,
                a_layout,
                b_layout,
                d_layout,
                d_layout,
                preference,
                candidates,
                results,
                ctypes.byref(found),
            )
        finally:
            self.lib.cublasLtMatmulPreferenceDestroy(preference)
        if found.value < 1:
            raise RuntimeError(f"cuBLASLt has no algorithm for epilogue {epilogue} at {shape}")
        if device not in self.workspaces:
            self.workspaces[device] = torch.empty(_WORKSPACE_BYTES, dtype=torch.uint8, device=f"cuda:{device}")
        return desc, layouts, list(results[: found.value])

    def _release(self, desc, layouts) -> None:
        """Destroy a descriptor and its layouts made for a one-off measurement (the job keeps its own for good)."""
        for layout in layouts:
            self.lib.cublasLtMatrixLayoutDestroy(layout)
        self.lib.cublasLtMatmulDescDestroy(desc)

    def _launch(self, desc, layouts, algo, left: torch.Tensor, right: torch.Tensor, out: torch.Tensor) -> None:
        a_layout, b_layout, d_layout = layouts
        one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
        self._check(
            "cublasLtMatmul",
            self.handle,
            desc,
            ctypes.byref(one),
            ctypes.c_void_p(right.data_ptr()),
            a_layout,
            ctypes.c_void_p(left.data_ptr()),
            b_layout,
            ctypes.byref(zero),
            ctypes.c_void_p(out.data_ptr()),
            d_layout,
            ctypes.c_void_p(out.data_ptr()),
            d_layout,
            ctypes.byref(algo),
            ctypes.c_void_p(self.workspaces[left.device.index].data_ptr()),
            ctypes.c_size_t(_WORKSPACE_BYTES),
            ctypes.c_void_p(torch.cuda.current_stream(left.device).cuda_stream),
        )

    def _timings(
        self, desc, layouts, candidates: list, left, right, out, runs: int = _TIMED_RUNS
    ) -> list[tuple[float, int]]:
        """(ms for ``runs`` runs, index) of each candidate that runs these operands, in the heuristics' order."""
        timings = []
        for index, candidate in enumerate(candidates):
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            try:
                self._launch(desc, layouts, candidate.algo, left, right, out)
                begin.record()
                for _ in range(runs):
                    self._launch(desc, layouts, candidate.algo, left, right, out)
                end.record()
            except RuntimeError:
                continue
            end.synchronize()
            timings.append((begin.elapsed_time(end), index))
        if not timings:
            raise RuntimeError("cuBLASLt could run none of the algorithms its heuristics proposed")
        return timings

    def matmul(
        self,
        left: torch.Tensor,
        right: torch.Tensor,
        right_transposed: bool,
        epilogue: int,
        out: torch.Tensor,
        bias: torch.Tensor | None,
        aux: torch.Tensor,
    ) -> None:
        """out = epilogue(left @ right): all bf16, contiguous and aligned (see ``aligned``), on one device; ``bias``
        only for the epilogues that read it. The algorithm is the fastest of the heuristics' candidates on these
        operands, timed on first use of the shape: the first choice for an epilogue can be an older kernel family
        that is slower than others they list."""
        shape = _shape(left, right, right_transposed, left_transposed=False)
        bias_pointer, aux_pointer = 0 if bias is None else bias.data_ptr(), aux.data_ptr()
        key = (epilogue, shape, left.device.index)
        with self.lock:
            if key not in self.prepared:
                desc, layouts, candidates = self._prepare(shape, epilogue, bias_pointer, aux_pointer, key[2])
                _, fastest = min(self._timings(desc, layouts, candidates, left, right, out))
                self.prepared[key] = desc, layouts, candidates[fastest]
            desc, layouts, chosen = self.prepared[key]
            self._set("cublasLtMatmulDescSetAttribute", desc, _DESC_BIAS_POINTER, ctypes.c_void_p(bias_pointer))
            self._set("cublasLtMatmulDescSetAttribute", desc, _DESC_AUX_POINTER, ctypes.c_void_p(aux_pointer))
            self._launch(desc, layouts, chosen.algo, left, right, out)

    def candidate_times(
        self,
        shape: Plan,
        left,
        right,
        out,
        candidates: int,
        runs: int,
        epilogue: int,
        bias: torch.Tensor | None,
        aux: torch.Tensor | None,
    ) -> list[float | None]:
        """ms per product (mean of ``runs`` back to back) for each of up to ``candidates`` algorithms, in the
        heuristics' order (None where one cannot run these operands)."""
        pointers = [0 if t is None else t.data_ptr() for t in (bias, aux)]
        with self.lock:
            desc, layouts, proposed = self._prepare(shape, epilogue, *pointers, left.device.index, candidates)
            try:
                timings = self._timings(desc, layouts, proposed, left, right, out, runs)
            finally:
                self._release(desc, layouts)
        measured = {index: ms / runs for ms, index in timings}
        return [measured.get(index) for index in range(len(proposed))]


def _shape(left: torch.Tensor, right: torch.Tensor, right_transposed: bool, left_transposed: bool) -> Plan:
    inner, rows = left.shape if left_transposed else left.shape[::-1]
    cols = right.shape[0] if right_transposed else right.shape[1]
    return plan(rows, inner, cols, right_transposed, left_transposed)


_instance: _CublasLt | None = None


def _cublaslt() -> _CublasLt:
    global _instance
    if _instance is None:
        _instance = _CublasLt()
    return _instance


def aligned(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` itself when cuBLASLt can read it as is (contiguous, 256-byte aligned), else an aligned copy."""
    if tensor.is_contiguous() and tensor.data_ptr() % _ALIGNMENT == 0:
        return tensor
    return tensor.clone(memory_format=torch.contiguous_format)


def algorithm_times(
    left: torch.Tensor,
    right: torch.Tensor,
    right_transposed: bool,
    left_transposed: bool,
    candidates: int,
    runs: int,
    epilogue: int = DEFAULT,
    bias: torch.Tensor | None = None,
    aux: torch.Tensor | None = None,
) -> list[float | None]:
    """How long the product takes with each algorithm cuBLASLt's heuristics propose, best guess first (None: that
    one could not run): shows how far PyTorch's matmul, or the heuristics' first choice, is from the fastest."""
    left, right = aligned(left), aligned(right)
    shape = _shape(left, right, right_transposed, left_transposed)
    cols, rows, _ = shape.d
    out = left.new_empty(rows, cols)
    return _cublaslt().candidate_times(shape, left, right, out, candidates, runs, epilogue, bias, aux)


def linear_gelu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """(gelu(x @ weight.T + bias), x @ weight.T + bias) in one product; x [rows, in], weight [out, in], bias [out]
    or None (no bias), bf16."""
    x, weight = aligned(x), aligned(weight)
    activated = x.new_empty(x.shape[0], weight.shape[0])
    pre = torch.empty_like(activated)
    epilogue, bias = (GELU_AUX, None) if bias is None else (GELU_AUX_BIAS, aligned(bias))
    _cublaslt().matmul(x, weight, True, epilogue, activated, bias, pre)
    return activated, pre


def matmul_gelu_grad(grad_out: torch.Tensor, weight: torch.Tensor, pre: torch.Tensor) -> torch.Tensor:
    """The gradient at GELU's input, (grad_out @ weight) * gelu'(pre); grad_out [rows, out], weight [out, hidden]
    (the next layer's), pre [rows, hidden], bf16."""
    grad_out, weight, pre = aligned(grad_out), aligned(weight), aligned(pre)
    grad_pre = torch.empty_like(pre)
    _cublaslt().matmul(grad_out, weight, False, DGELU, grad_pre, None, pre)
    return grad_pre
