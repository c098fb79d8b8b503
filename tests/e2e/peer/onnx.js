// The network as an ONNX model (opset 13), written from the safetensors' tensors for
// onnxruntime-web: the side-by-side benchmark converts the very weights calibra runs when it
// starts, so no converted file is committed. Only what this network needs of the format is
// written (onnx/onnx.proto: ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto,
// ValueInfoProto), in protobuf's wire format. The input is "images", [N, 1, 28, 28] float32 with
// pixels in [0, 1]; the output is "logits", [N, 10].

const SIDE = 28;

// Protobuf wire types.
const VARINT = 0;
const BYTES = 2;
// onnx.proto's enums: TensorProto.DataType.FLOAT, AttributeProto.AttributeType.INT and INTS.
const FLOAT = 1;
const INT = 2;
const INTS = 7;

const utf8 = new TextEncoder();

// A message under construction: fields appended in order, each a key then its value.
class Message {
  constructor() {
    this.parts = [];
  }
  varint(field, value) {
    this.parts.push(varint((field << 3) | VARINT), varint(value));
    return this;
  }
  bytes(field, value) {
    this.parts.push(varint((field << 3) | BYTES), varint(value.length), value);
    return this;
  }
  string(field, value) {
    return this.bytes(field, utf8.encode(value));
  }
  message(field, value) {
    return this.bytes(field, value.encode());
  }
  encode() {
    const out = new Uint8Array(this.parts.reduce((sum, part) => sum + part.length, 0));
    let at = 0;
    for (const part of this.parts) {
      out.set(part, at);
      at += part.length;
    }
    return out;
  }
}

// A non-negative integer as a base-128 varint.
function varint(value) {
  const out = [];
  let rest = value;
  while (rest >= 0x80) {
    out.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  out.push(rest);
  return Uint8Array.from(out);
}

// A float32 initializer (TensorProto: dims 1, data_type 2, name 8, raw_data 9, little-endian).
function initializer(name, { shape, data }) {
  const tensor = new Message();
  for (const dim of shape) tensor.varint(1, dim);
  tensor.varint(2, FLOAT).string(8, name);
  return tensor.bytes(9, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
}

// An integer or integer-list attribute (AttributeProto: name 1, i 3, ints 8, type 20).
function attribute(name, value) {
  const message = new Message().string(1, name);
  if (Array.isArray(value)) {
    for (const v of value) message.varint(8, v);
    return message.varint(20, INTS);
  }
  return message.varint(3, value).varint(20, INT);
}

// A node (NodeProto: input 1, output 2, name 3, op_type 4, attribute 5).
function node(opType, inputs, output, attributes = {}) {
  const message = new Message();
  for (const input of inputs) message.string(1, input);
  message.string(2, output).string(3, output).string(4, opType);
  for (const [name, value] of Object.entries(attributes)) message.message(5, attribute(name, value));
  return message;
}

// A float32 graph input or output whose first dimension is the batch (ValueInfoProto: name 1,
// type 2; TypeProto.tensor_type 1; elem_type 1, shape 2; Dimension: dim_value 1, dim_param 2).
function valueInfo(name, dims) {
  const shape = new Message();
  shape.message(1, new Message().string(2, "N"));
  for (const dim of dims) shape.message(1, new Message().varint(1, dim));
  const tensorType = new Message().varint(1, FLOAT).message(2, shape);
  return new Message().string(1, name).message(2, new Message().message(1, tensorType));
}

// The ONNX model's bytes for the safetensors' tensors ({ name: { shape, data: Float32Array } }):
// convolutions with candle's [out, in, kh, kw] filters as they are (ONNX's layout too), dense
// layers as Gemm with the [out, in] weights transposed (transB), flattened in NCHW order as
// candle flattens.
export function onnxModel(tensors) {
  const convolution = { kernel_shape: [3, 3], pads: [1, 1, 1, 1] };
  const pool = { kernel_shape: [2, 2], strides: [2, 2] };
  const nodes = [
    node("Conv", ["images", "conv1.weight", "conv1.bias"], "conv1", convolution),
    node("Relu", ["conv1"], "relu1"),
    node("MaxPool", ["relu1"], "pool1", pool),
    node("Conv", ["pool1", "conv2.weight", "conv2.bias"], "conv2", convolution),
    node("Relu", ["conv2"], "relu2"),
    node("MaxPool", ["relu2"], "pool2", pool),
    node("Flatten", ["pool2"], "flat", { axis: 1 }),
    node("Gemm", ["flat", "dense1.weight", "dense1.bias"], "dense1", { transB: 1 }),
    node("Relu", ["dense1"], "relu3"),
    node("Gemm", ["relu3", "dense2.weight", "dense2.bias"], "logits", { transB: 1 }),
  ];
  const graph = new Message();
  for (const n of nodes) graph.message(1, n);
  graph.string(2, "calibra");
  for (const name of ["conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "dense1.weight", "dense1.bias", "dense2.weight", "dense2.bias"]) {
    graph.message(5, initializer(name, tensors[name]));
  }
  graph.message(11, valueInfo("images", [1, SIDE, SIDE]));
  graph.message(12, valueInfo("logits", [tensors["dense2.bias"].shape[0]]));
  // ModelProto: ir_version 1, producer_name 2, graph 7, opset_import 8 (version 2).
  return new Message()
    .varint(1, 8)
    .string(2, "calibra peer-bench")
    .message(7, graph)
    .message(8, new Message().varint(2, 13))
    .encode();
}
