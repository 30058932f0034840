"""GridSample / AffineGrid vs onnxruntime: modes, padding modes (grid points beyond [-1, 1]),
align_corners, GridSample-16's 4-D form and GridSample-20's 5-D one, constant AffineGrid sizes."""
from onnx_ops_vs_onnxruntime import model, rnd, helper, np


def grid_sample(x_shape, grid_shape, opset=20, **attrs):
    node = helper.make_node("GridSample", ["x", "g"], ["y"], **attrs)
    return (model([node], [("x", x_shape), ("g", grid_shape)], ["y"], opset=opset),
            {"x": rnd(*x_shape, seed=1), "g": rnd(*grid_shape, seed=2, lo=-1.3, hi=1.3)})


def affine_grid(theta_shape, size, **attrs):
    node = helper.make_node("AffineGrid", ["theta", "size"], ["y"], **attrs)
    return (model([node], [("theta", theta_shape)], ["y"], [("size", np.array(size, np.int64))], opset=20),
            {"theta": rnd(*theta_shape, seed=3)})


CASES = {
    "gridsample16_bilinear_zeros": lambda: grid_sample((2, 3, 5, 7), (2, 4, 6, 2), opset=16, mode="bilinear"),
    # (cubic with border padding is left out: there onnxruntime clamps the taps, not the
    # coordinate, and disagrees with the ONNX reference that Keel and the conformance cases follow)
    "gridsample16_bicubic_zeros": lambda: grid_sample((1, 2, 6, 5), (1, 3, 4, 2), opset=16, mode="bicubic"),
    "gridsample_nearest_reflection": lambda: grid_sample((1, 2, 5, 6), (1, 7, 3, 2), mode="nearest",
                                                         padding_mode="reflection"),
    "gridsample_linear_reflection_align": lambda: grid_sample((1, 3, 4, 5), (1, 6, 6, 2), mode="linear",
                                                              padding_mode="reflection", align_corners=1),
    "gridsample_cubic_zeros_align": lambda: grid_sample((1, 1, 6, 6), (1, 5, 5, 2), mode="cubic", align_corners=1),
    "gridsample_trilinear_border": lambda: grid_sample((1, 2, 4, 5, 3), (1, 3, 2, 4, 3), mode="linear",
                                                       padding_mode="border"),
    "affine_grid_2d": lambda: affine_grid((2, 2, 3), [2, 3, 5, 7]),
    "affine_grid_3d_align": lambda: affine_grid((1, 3, 4), [1, 1, 3, 4, 5], align_corners=1),
}
