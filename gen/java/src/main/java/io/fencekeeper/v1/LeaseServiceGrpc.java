package io.fencekeeper.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * LeaseService hands out leases on named resources, each with a fencing token.
 * A lease lasts for its TTL unless its holder renews it (Renew, or a message on a KeepAlive stream).
 * The server never renews a lease on its own: a holder that is paused, partitioned or dead loses its
 * lease when the TTL runs out, and the next acquisition gets a greater token. Closing a KeepAlive
 * stream releases nothing. A renewal whose answer arrives late proves nothing: measure how long you
 * may act from the moment you sent the renewal, not from when its answer came.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class LeaseServiceGrpc {

  private LeaseServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "fencekeeper.v1.LeaseService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<io.fencekeeper.v1.AcquireRequest,
      io.fencekeeper.v1.AcquireResponse> getAcquireMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Acquire",
      requestType = io.fencekeeper.v1.AcquireRequest.class,
      responseType = io.fencekeeper.v1.AcquireResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.fencekeeper.v1.AcquireRequest,
      io.fencekeeper.v1.AcquireResponse> getAcquireMethod() {
    io.grpc.MethodDescriptor<io.fencekeeper.v1.AcquireRequest, io.fencekeeper.v1.AcquireResponse> getAcquireMethod;
    if ((getAcquireMethod = LeaseServiceGrpc.getAcquireMethod) == null) {
      synchronized (LeaseServiceGrpc.class) {
        if ((getAcquireMethod = LeaseServiceGrpc.getAcquireMethod) == null) {
          LeaseServiceGrpc.getAcquireMethod = getAcquireMethod =
              io.grpc.MethodDescriptor.<io.fencekeeper.v1.AcquireRequest, io.fencekeeper.v1.AcquireResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Acquire"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.AcquireRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.AcquireResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LeaseServiceMethodDescriptorSupplier("Acquire"))
              .build();
        }
      }
    }
    return getAcquireMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.fencekeeper.v1.KeepAliveRequest,
      io.fencekeeper.v1.KeepAliveResponse> getKeepAliveMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "KeepAlive",
      requestType = io.fencekeeper.v1.KeepAliveRequest.class,
      responseType = io.fencekeeper.v1.KeepAliveResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.BIDI_STREAMING)
  public static io.grpc.MethodDescriptor<io.fencekeeper.v1.KeepAliveRequest,
      io.fencekeeper.v1.KeepAliveResponse> getKeepAliveMethod() {
    io.grpc.MethodDescriptor<io.fencekeeper.v1.KeepAliveRequest, io.fencekeeper.v1.KeepAliveResponse> getKeepAliveMethod;
    if ((getKeepAliveMethod = LeaseServiceGrpc.getKeepAliveMethod) == null) {
      synchronized (LeaseServiceGrpc.class) {
        if ((getKeepAliveMethod = LeaseServiceGrpc.getKeepAliveMethod) == null) {
          LeaseServiceGrpc.getKeepAliveMethod = getKeepAliveMethod =
              io.grpc.MethodDescriptor.<io.fencekeeper.v1.KeepAliveRequest, io.fencekeeper.v1.KeepAliveResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.BIDI_STREAMING)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "KeepAlive"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.KeepAliveRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.KeepAliveResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LeaseServiceMethodDescriptorSupplier("KeepAlive"))
              .build();
        }
      }
    }
    return getKeepAliveMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.fencekeeper.v1.RenewRequest,
      io.fencekeeper.v1.RenewResponse> getRenewMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Renew",
      requestType = io.fencekeeper.v1.RenewRequest.class,
      responseType = io.fencekeeper.v1.RenewResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.fencekeeper.v1.RenewRequest,
      io.fencekeeper.v1.RenewResponse> getRenewMethod() {
    io.grpc.MethodDescriptor<io.fencekeeper.v1.RenewRequest, io.fencekeeper.v1.RenewResponse> getRenewMethod;
    if ((getRenewMethod = LeaseServiceGrpc.getRenewMethod) == null) {
      synchronized (LeaseServiceGrpc.class) {
        if ((getRenewMethod = LeaseServiceGrpc.getRenewMethod) == null) {
          LeaseServiceGrpc.getRenewMethod = getRenewMethod =
              io.grpc.MethodDescriptor.<io.fencekeeper.v1.RenewRequest, io.fencekeeper.v1.RenewResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Renew"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.RenewRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.RenewResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LeaseServiceMethodDescriptorSupplier("Renew"))
              .build();
        }
      }
    }
    return getRenewMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.fencekeeper.v1.ReleaseRequest,
      io.fencekeeper.v1.ReleaseResponse> getReleaseMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Release",
      requestType = io.fencekeeper.v1.ReleaseRequest.class,
      responseType = io.fencekeeper.v1.ReleaseResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.fencekeeper.v1.ReleaseRequest,
      io.fencekeeper.v1.ReleaseResponse> getReleaseMethod() {
    io.grpc.MethodDescriptor<io.fencekeeper.v1.ReleaseRequest, io.fencekeeper.v1.ReleaseResponse> getReleaseMethod;
    if ((getReleaseMethod = LeaseServiceGrpc.getReleaseMethod) == null) {
      synchronized (LeaseServiceGrpc.class) {
        if ((getReleaseMethod = LeaseServiceGrpc.getReleaseMethod) == null) {
          LeaseServiceGrpc.getReleaseMethod = getReleaseMethod =
              io.grpc.MethodDescriptor.<io.fencekeeper.v1.ReleaseRequest, io.fencekeeper.v1.ReleaseResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Release"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.ReleaseRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.ReleaseResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LeaseServiceMethodDescriptorSupplier("Release"))
              .build();
        }
      }
    }
    return getReleaseMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.fencekeeper.v1.DescribeRequest,
      io.fencekeeper.v1.DescribeResponse> getDescribeMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Describe",
      requestType = io.fencekeeper.v1.DescribeRequest.class,
      responseType = io.fencekeeper.v1.DescribeResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.fencekeeper.v1.DescribeRequest,
      io.fencekeeper.v1.DescribeResponse> getDescribeMethod() {
    io.grpc.MethodDescriptor<io.fencekeeper.v1.DescribeRequest, io.fencekeeper.v1.DescribeResponse> getDescribeMethod;
    if ((getDescribeMethod = LeaseServiceGrpc.getDescribeMethod) == null) {
      synchronized (LeaseServiceGrpc.class) {
        if ((getDescribeMethod = LeaseServiceGrpc.getDescribeMethod) == null) {
          LeaseServiceGrpc.getDescribeMethod = getDescribeMethod =
              io.grpc.MethodDescriptor.<io.fencekeeper.v1.DescribeRequest, io.fencekeeper.v1.DescribeResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Describe"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.DescribeRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.DescribeResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LeaseServiceMethodDescriptorSupplier("Describe"))
              .build();
        }
      }
    }
    return getDescribeMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.fencekeeper.v1.ListResourcesRequest,
      io.fencekeeper.v1.ListResourcesResponse> getListResourcesMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListResources",
      requestType = io.fencekeeper.v1.ListResourcesRequest.class,
      responseType = io.fencekeeper.v1.ListResourcesResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.fencekeeper.v1.ListResourcesRequest,
      io.fencekeeper.v1.ListResourcesResponse> getListResourcesMethod() {
    io.grpc.MethodDescriptor<io.fencekeeper.v1.ListResourcesRequest, io.fencekeeper.v1.ListResourcesResponse> getListResourcesMethod;
    if ((getListResourcesMethod = LeaseServiceGrpc.getListResourcesMethod) == null) {
      synchronized (LeaseServiceGrpc.class) {
        if ((getListResourcesMethod = LeaseServiceGrpc.getListResourcesMethod) == null) {
          LeaseServiceGrpc.getListResourcesMethod = getListResourcesMethod =
              io.grpc.MethodDescriptor.<io.fencekeeper.v1.ListResourcesRequest, io.fencekeeper.v1.ListResourcesResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListResources"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.ListResourcesRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.ListResourcesResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LeaseServiceMethodDescriptorSupplier("ListResources"))
              .build();
        }
      }
    }
    return getListResourcesMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.fencekeeper.v1.ObserveRequest,
      io.fencekeeper.v1.ObserveResponse> getObserveMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Observe",
      requestType = io.fencekeeper.v1.ObserveRequest.class,
      responseType = io.fencekeeper.v1.ObserveResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
  public static io.grpc.MethodDescriptor<io.fencekeeper.v1.ObserveRequest,
      io.fencekeeper.v1.ObserveResponse> getObserveMethod() {
    io.grpc.MethodDescriptor<io.fencekeeper.v1.ObserveRequest, io.fencekeeper.v1.ObserveResponse> getObserveMethod;
    if ((getObserveMethod = LeaseServiceGrpc.getObserveMethod) == null) {
      synchronized (LeaseServiceGrpc.class) {
        if ((getObserveMethod = LeaseServiceGrpc.getObserveMethod) == null) {
          LeaseServiceGrpc.getObserveMethod = getObserveMethod =
              io.grpc.MethodDescriptor.<io.fencekeeper.v1.ObserveRequest, io.fencekeeper.v1.ObserveResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Observe"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.ObserveRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.ObserveResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LeaseServiceMethodDescriptorSupplier("Observe"))
              .build();
        }
      }
    }
    return getObserveMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.fencekeeper.v1.OpenSessionRequest,
      io.fencekeeper.v1.OpenSessionResponse> getOpenSessionMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "OpenSession",
      requestType = io.fencekeeper.v1.OpenSessionRequest.class,
      responseType = io.fencekeeper.v1.OpenSessionResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.fencekeeper.v1.OpenSessionRequest,
      io.fencekeeper.v1.OpenSessionResponse> getOpenSessionMethod() {
    io.grpc.MethodDescriptor<io.fencekeeper.v1.OpenSessionRequest, io.fencekeeper.v1.OpenSessionResponse> getOpenSessionMethod;
    if ((getOpenSessionMethod = LeaseServiceGrpc.getOpenSessionMethod) == null) {
      synchronized (LeaseServiceGrpc.class) {
        if ((getOpenSessionMethod = LeaseServiceGrpc.getOpenSessionMethod) == null) {
          LeaseServiceGrpc.getOpenSessionMethod = getOpenSessionMethod =
              io.grpc.MethodDescriptor.<io.fencekeeper.v1.OpenSessionRequest, io.fencekeeper.v1.OpenSessionResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "OpenSession"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.OpenSessionRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.OpenSessionResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LeaseServiceMethodDescriptorSupplier("OpenSession"))
              .build();
        }
      }
    }
    return getOpenSessionMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.fencekeeper.v1.CloseSessionRequest,
      io.fencekeeper.v1.CloseSessionResponse> getCloseSessionMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "CloseSession",
      requestType = io.fencekeeper.v1.CloseSessionRequest.class,
      responseType = io.fencekeeper.v1.CloseSessionResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.fencekeeper.v1.CloseSessionRequest,
      io.fencekeeper.v1.CloseSessionResponse> getCloseSessionMethod() {
    io.grpc.MethodDescriptor<io.fencekeeper.v1.CloseSessionRequest, io.fencekeeper.v1.CloseSessionResponse> getCloseSessionMethod;
    if ((getCloseSessionMethod = LeaseServiceGrpc.getCloseSessionMethod) == null) {
      synchronized (LeaseServiceGrpc.class) {
        if ((getCloseSessionMethod = LeaseServiceGrpc.getCloseSessionMethod) == null) {
          LeaseServiceGrpc.getCloseSessionMethod = getCloseSessionMethod =
              io.grpc.MethodDescriptor.<io.fencekeeper.v1.CloseSessionRequest, io.fencekeeper.v1.CloseSessionResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "CloseSession"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.CloseSessionRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.CloseSessionResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LeaseServiceMethodDescriptorSupplier("CloseSession"))
              .build();
        }
      }
    }
    return getCloseSessionMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.fencekeeper.v1.ListTokenKeysRequest,
      io.fencekeeper.v1.ListTokenKeysResponse> getListTokenKeysMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListTokenKeys",
      requestType = io.fencekeeper.v1.ListTokenKeysRequest.class,
      responseType = io.fencekeeper.v1.ListTokenKeysResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.fencekeeper.v1.ListTokenKeysRequest,
      io.fencekeeper.v1.ListTokenKeysResponse> getListTokenKeysMethod() {
    io.grpc.MethodDescriptor<io.fencekeeper.v1.ListTokenKeysRequest, io.fencekeeper.v1.ListTokenKeysResponse> getListTokenKeysMethod;
    if ((getListTokenKeysMethod = LeaseServiceGrpc.getListTokenKeysMethod) == null) {
      synchronized (LeaseServiceGrpc.class) {
        if ((getListTokenKeysMethod = LeaseServiceGrpc.getListTokenKeysMethod) == null) {
          LeaseServiceGrpc.getListTokenKeysMethod = getListTokenKeysMethod =
              io.grpc.MethodDescriptor.<io.fencekeeper.v1.ListTokenKeysRequest, io.fencekeeper.v1.ListTokenKeysResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListTokenKeys"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.ListTokenKeysRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.ListTokenKeysResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LeaseServiceMethodDescriptorSupplier("ListTokenKeys"))
              .build();
        }
      }
    }
    return getListTokenKeysMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.fencekeeper.v1.LiftLockDelayRequest,
      io.fencekeeper.v1.LiftLockDelayResponse> getLiftLockDelayMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "LiftLockDelay",
      requestType = io.fencekeeper.v1.LiftLockDelayRequest.class,
      responseType = io.fencekeeper.v1.LiftLockDelayResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.fencekeeper.v1.LiftLockDelayRequest,
      io.fencekeeper.v1.LiftLockDelayResponse> getLiftLockDelayMethod() {
    io.grpc.MethodDescriptor<io.fencekeeper.v1.LiftLockDelayRequest, io.fencekeeper.v1.LiftLockDelayResponse> getLiftLockDelayMethod;
    if ((getLiftLockDelayMethod = LeaseServiceGrpc.getLiftLockDelayMethod) == null) {
      synchronized (LeaseServiceGrpc.class) {
        if ((getLiftLockDelayMethod = LeaseServiceGrpc.getLiftLockDelayMethod) == null) {
          LeaseServiceGrpc.getLiftLockDelayMethod = getLiftLockDelayMethod =
              io.grpc.MethodDescriptor.<io.fencekeeper.v1.LiftLockDelayRequest, io.fencekeeper.v1.LiftLockDelayResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "LiftLockDelay"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.LiftLockDelayRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.LiftLockDelayResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LeaseServiceMethodDescriptorSupplier("LiftLockDelay"))
              .build();
        }
      }
    }
    return getLiftLockDelayMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.fencekeeper.v1.ProclaimRequest,
      io.fencekeeper.v1.ProclaimResponse> getProclaimMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Proclaim",
      requestType = io.fencekeeper.v1.ProclaimRequest.class,
      responseType = io.fencekeeper.v1.ProclaimResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.fencekeeper.v1.ProclaimRequest,
      io.fencekeeper.v1.ProclaimResponse> getProclaimMethod() {
    io.grpc.MethodDescriptor<io.fencekeeper.v1.ProclaimRequest, io.fencekeeper.v1.ProclaimResponse> getProclaimMethod;
    if ((getProclaimMethod = LeaseServiceGrpc.getProclaimMethod) == null) {
      synchronized (LeaseServiceGrpc.class) {
        if ((getProclaimMethod = LeaseServiceGrpc.getProclaimMethod) == null) {
          LeaseServiceGrpc.getProclaimMethod = getProclaimMethod =
              io.grpc.MethodDescriptor.<io.fencekeeper.v1.ProclaimRequest, io.fencekeeper.v1.ProclaimResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Proclaim"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.ProclaimRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.ProclaimResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LeaseServiceMethodDescriptorSupplier("Proclaim"))
              .build();
        }
      }
    }
    return getProclaimMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.fencekeeper.v1.LeaseBatchRequest,
      io.fencekeeper.v1.LeaseBatchResponse> getLeaseBatchMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "LeaseBatch",
      requestType = io.fencekeeper.v1.LeaseBatchRequest.class,
      responseType = io.fencekeeper.v1.LeaseBatchResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.fencekeeper.v1.LeaseBatchRequest,
      io.fencekeeper.v1.LeaseBatchResponse> getLeaseBatchMethod() {
    io.grpc.MethodDescriptor<io.fencekeeper.v1.LeaseBatchRequest, io.fencekeeper.v1.LeaseBatchResponse> getLeaseBatchMethod;
    if ((getLeaseBatchMethod = LeaseServiceGrpc.getLeaseBatchMethod) == null) {
      synchronized (LeaseServiceGrpc.class) {
        if ((getLeaseBatchMethod = LeaseServiceGrpc.getLeaseBatchMethod) == null) {
          LeaseServiceGrpc.getLeaseBatchMethod = getLeaseBatchMethod =
              io.grpc.MethodDescriptor.<io.fencekeeper.v1.LeaseBatchRequest, io.fencekeeper.v1.LeaseBatchResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "LeaseBatch"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.LeaseBatchRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.LeaseBatchResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LeaseServiceMethodDescriptorSupplier("LeaseBatch"))
              .build();
        }
      }
    }
    return getLeaseBatchMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.fencekeeper.v1.AcquireAllRequest,
      io.fencekeeper.v1.AcquireAllResponse> getAcquireAllMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "AcquireAll",
      requestType = io.fencekeeper.v1.AcquireAllRequest.class,
      responseType = io.fencekeeper.v1.AcquireAllResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.fencekeeper.v1.AcquireAllRequest,
      io.fencekeeper.v1.AcquireAllResponse> getAcquireAllMethod() {
    io.grpc.MethodDescriptor<io.fencekeeper.v1.AcquireAllRequest, io.fencekeeper.v1.AcquireAllResponse> getAcquireAllMethod;
    if ((getAcquireAllMethod = LeaseServiceGrpc.getAcquireAllMethod) == null) {
      synchronized (LeaseServiceGrpc.class) {
        if ((getAcquireAllMethod = LeaseServiceGrpc.getAcquireAllMethod) == null) {
          LeaseServiceGrpc.getAcquireAllMethod = getAcquireAllMethod =
              io.grpc.MethodDescriptor.<io.fencekeeper.v1.AcquireAllRequest, io.fencekeeper.v1.AcquireAllResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "AcquireAll"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.AcquireAllRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.AcquireAllResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LeaseServiceMethodDescriptorSupplier("AcquireAll"))
              .build();
        }
      }
    }
    return getAcquireAllMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static LeaseServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<LeaseServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<LeaseServiceStub>() {
        @java.lang.Override
        public LeaseServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new LeaseServiceStub(channel, callOptions);
        }
      };
    return LeaseServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static LeaseServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<LeaseServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<LeaseServiceBlockingV2Stub>() {
        @java.lang.Override
        public LeaseServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new LeaseServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return LeaseServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static LeaseServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<LeaseServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<LeaseServiceBlockingStub>() {
        @java.lang.Override
        public LeaseServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new LeaseServiceBlockingStub(channel, callOptions);
        }
      };
    return LeaseServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static LeaseServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<LeaseServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<LeaseServiceFutureStub>() {
        @java.lang.Override
        public LeaseServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new LeaseServiceFutureStub(channel, callOptions);
        }
      };
    return LeaseServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * LeaseService hands out leases on named resources, each with a fencing token.
   * A lease lasts for its TTL unless its holder renews it (Renew, or a message on a KeepAlive stream).
   * The server never renews a lease on its own: a holder that is paused, partitioned or dead loses its
   * lease when the TTL runs out, and the next acquisition gets a greater token. Closing a KeepAlive
   * stream releases nothing. A renewal whose answer arrives late proves nothing: measure how long you
   * may act from the moment you sent the renewal, not from when its answer came.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * Acquire a resource. Either fails fast (ABORTED, reason RESOURCE_HELD) when it is held, or waits in
     * FIFO order until it is granted, the call's deadline or wait_timeout passes (DEADLINE_EXCEEDED), or
     * the caller cancels. A waiter that gives up leaves nothing behind. While the resource is in a
     * lock-delay (AcquireRequest.lock_delay), nobody is granted it: fail fast answers ABORTED, reason
     * LOCK_DELAY, and waiters are granted in order once the delay ends.
     * </pre>
     */
    default void acquire(io.fencekeeper.v1.AcquireRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.AcquireResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getAcquireMethod(), responseObserver);
    }

    /**
     * <pre>
     * Keep leases alive. Send a KeepAliveRequest for a lease whenever you want it renewed (every third of
     * its TTL is usual); each gets one KeepAliveResponse. One stream may carry any number of leases.
     * </pre>
     */
    default io.grpc.stub.StreamObserver<io.fencekeeper.v1.KeepAliveRequest> keepAlive(
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.KeepAliveResponse> responseObserver) {
      return io.grpc.stub.ServerCalls.asyncUnimplementedStreamingCall(getKeepAliveMethod(), responseObserver);
    }

    /**
     * <pre>
     * Renew one lease once. NOT_FOUND (reason LEASE_NOT_FOUND) if it expired or never existed.
     * </pre>
     */
    default void renew(io.fencekeeper.v1.RenewRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.RenewResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getRenewMethod(), responseObserver);
    }

    /**
     * <pre>
     * Give up a lease now, so that the next waiter is granted at once. NOT_FOUND if it is already gone.
     * A holding that was preempted is given up too (OK): its lease ends at once.
     * </pre>
     */
    default void release(io.fencekeeper.v1.ReleaseRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.ReleaseResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getReleaseMethod(), responseObserver);
    }

    /**
     * <pre>
     * Describe who holds a resource, with which token, for how much longer, and how many wait. An answer
     * stays within the server's answer budget (--max-answer-bytes, 1 MiB by default): a resource whose
     * shared holders' values pass it is described a page of holders at a time (holders_page_token).
     * Holders' tokens carry their signature only for the caller that is their principal (FencingToken.signature).
     * </pre>
     */
    default void describe(io.fencekeeper.v1.DescribeRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.DescribeResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getDescribeMethod(), responseObserver);
    }

    /**
     * <pre>
     * List the resources in use, whose names start with a prefix, in name order, a page at a time, each
     * as Describe describes it: held (exclusively or shared), waited for, or serving a lock-delay. With
     * a policy, only the resources the caller may observe are listed (the others are left out, not
     * refused). For consoles and operators: "who holds what, and who waits". A page ends at page_size
     * resources or at the server's answer budget (--max-answer-bytes, 1 MiB by default), whichever comes
     * first, and holds at least one resource.
     * </pre>
     */
    default void listResources(io.fencekeeper.v1.ListResourcesRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.ListResourcesResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListResourcesMethod(), responseObserver);
    }

    /**
     * <pre>
     * Stream the ownership changes of one resource, starting with its current state: each new holder, and
     * each new value a holder proclaims (Proclaim), in the order etcd committed them. The server keeps
     * at most --max-stream-buffer-bytes (2 MiB by default) of changes its reader has not taken yet; a
     * reader that falls further behind is not cut off: the changes waiting for it are dropped, and the
     * next message it reads is the state at that moment, with missed_changes set (as etcd's watch tells
     * a watcher that fell behind compaction, but the stream goes on).
     * </pre>
     */
    default void observe(io.fencekeeper.v1.ObserveRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.ObserveResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getObserveMethod(), responseObserver);
    }

    /**
     * <pre>
     * Open a session: one lease that many acquisitions share, as etcd's concurrency.Session and
     * Chubby's sessions do. Acquire with session_id set puts an acquisition on the session instead of
     * on a lease of its own; one renewal of the session (Renew or KeepAlive with the session_id as the
     * lease id) keeps all of them, and when the session expires every one of them is lost at once.
     * Each acquisition on a session still gets a generation of its own, and Release ends one of them.
     * </pre>
     */
    default void openSession(io.fencekeeper.v1.OpenSessionRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.OpenSessionResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getOpenSessionMethod(), responseObserver);
    }

    /**
     * <pre>
     * Close a session now: every acquisition on it is released, and the next waiters are granted.
     * NOT_FOUND (reason LEASE_NOT_FOUND) if the session expired or was closed already.
     * </pre>
     */
    default void closeSession(io.fencekeeper.v1.CloseSessionRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.CloseSessionResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getCloseSessionMethod(), responseObserver);
    }

    /**
     * <pre>
     * The public keys that verify tokens' signatures (FencingToken.signature), so that a resource outside
     * fencekeeper can check a token offline. Every key that signed a token still in use is listed; fetch
     * the list again when a token names a key_id you do not know.
     * </pre>
     */
    default void listTokenKeys(io.fencekeeper.v1.ListTokenKeysRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.ListTokenKeysResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListTokenKeysMethod(), responseObserver);
    }

    /**
     * <pre>
     * End the lock-delay being served on a resource (Describe shows held false and lock_delay_until), so
     * that the first waiter is granted at once: for an operator who knows that the lost holder is gone
     * (its machine is off) and will not wait out the delay. Needs the policy verb admin on the resource
     * (without a policy, any caller may). A resource with no lock-delay being served changes nothing and
     * answers lifted false; so does a held one, whose holder's lock-delay starts only if its lease
     * expires (release the holder instead).
     * </pre>
     */
    default void liftLockDelay(io.fencekeeper.v1.LiftLockDelayRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.LiftLockDelayResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getLiftLockDelayMethod(), responseObserver);
    }

    /**
     * <pre>
     * Change the value published with an acquisition (AcquireRequest.value) without giving it up: a
     * leader announcing a new address, for example. Only the token of the generation that holds the
     * resource now may, and only its principal (with authentication on); the token's lease is not renewed.
     * A token that no longer holds the resource is refused as a stale write is (FAILED_PRECONDITION):
     * STALE_TOKEN when a newer generation has been granted since (or has written), LEASE_NOT_HELD when its
     * lease expired or was released and nobody newer was granted, GENERATION_NOT_ISSUED for a generation
     * never issued. Observe reports the new value. Needs the policy verb acquire on the resource.
     * </pre>
     */
    default void proclaim(io.fencekeeper.v1.ProclaimRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.ProclaimResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getProclaimMethod(), responseObserver);
    }

    /**
     * <pre>
     * Many independent acquisitions and releases in one call, each answered on its own (as
     * FencedStoreService.Batch does for writes): an op gets exactly the answer, or the error (code,
     * message and ErrorInfo), that the same Acquire or Release alone would have got, and one op's
     * refusal does not touch the others. This is not AcquireAll: nothing here is all or nothing. The ops
     * are concurrent, like as many calls sent at once; the server commits the grants and releases that
     * arrive together in as few etcd transactions as it can. The call answers when every op has its
     * answer, so an acquisition with wait holds up the answers of the others: clients send ops that do
     * not wait (and send an Acquire with wait alone).
     * Each op is authorized on its own resource (the verb acquire; a release by an admin of the
     * resource as Release alone): a denied op is answered PERMISSION_DENIED on its own. An acquisition
     * with preempt is refused on its own (INVALID_ARGUMENT): preempt with Acquire alone. Each
     * acquisition with wait takes one of the caller's waiting-Acquire slots while it waits.
     * The call itself fails only when the batch as a whole cannot be taken: INVALID_ARGUMENT (reason
     * BATCH_TOO_LARGE) over 1000 ops or 2 MiB of values (AcquireRequest.value), or with no ops; or with
     * the codes any call may get. When the call fails with UNAVAILABLE, DEADLINE_EXCEEDED or CANCELLED,
     * each op may or may not have taken effect: an acquisition granted then ends with its lease's TTL
     * (or its session), since its token never reached the caller. A server that predates LeaseBatch
     * answers UNIMPLEMENTED: send the ops one by one.
     * </pre>
     */
    default void leaseBatch(io.fencekeeper.v1.LeaseBatchRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.LeaseBatchResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getLeaseBatchMethod(), responseObserver);
    }

    /**
     * <pre>
     * Acquire several resources, all or nothing, as Curator's InterProcessMultiLock does: each resource
     * is acquired exclusively, one after the other in a fixed order (their names' UTF-8 bytes, ascending),
     * so that two callers asking for overlapping sets never wait for each other in a cycle. With wait,
     * the call waits (each resource in FIFO order, as Acquire does) until it holds them all, or until the
     * call's deadline or wait_timeout passes for the whole set. Without wait, it fails fast on the first
     * resource that is held. On any failure, the resources it had acquired are released before it
     * answers (the next waiters are granted), and the answer is the failure of the resource that failed,
     * as Acquire alone would give it (ABORTED RESOURCE_HELD, DEADLINE_EXCEEDED, ...). If the server
     * cannot release them (etcd unavailable), they end with their leases' TTL or with the session.
     * Each resource gets an acquisition of its own: its own generation and token, on a lease of its own
     * (each renewed and released on its own) or on the session given. Authorized as Acquire on every
     * resource: one denied resource refuses the call (PERMISSION_DENIED), before anything is acquired.
     * INVALID_ARGUMENT for no resources, more than 100, a resource named twice, or a name that cannot
     * be a resource; then nothing is acquired. With wait, the call takes one waiting-Acquire slot.
     * </pre>
     */
    default void acquireAll(io.fencekeeper.v1.AcquireAllRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.AcquireAllResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getAcquireAllMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service LeaseService.
   * <pre>
   * LeaseService hands out leases on named resources, each with a fencing token.
   * A lease lasts for its TTL unless its holder renews it (Renew, or a message on a KeepAlive stream).
   * The server never renews a lease on its own: a holder that is paused, partitioned or dead loses its
   * lease when the TTL runs out, and the next acquisition gets a greater token. Closing a KeepAlive
   * stream releases nothing. A renewal whose answer arrives late proves nothing: measure how long you
   * may act from the moment you sent the renewal, not from when its answer came.
   * </pre>
   */
  public static abstract class LeaseServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return LeaseServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service LeaseService.
   * <pre>
   * LeaseService hands out leases on named resources, each with a fencing token.
   * A lease lasts for its TTL unless its holder renews it (Renew, or a message on a KeepAlive stream).
   * The server never renews a lease on its own: a holder that is paused, partitioned or dead loses its
   * lease when the TTL runs out, and the next acquisition gets a greater token. Closing a KeepAlive
   * stream releases nothing. A renewal whose answer arrives late proves nothing: measure how long you
   * may act from the moment you sent the renewal, not from when its answer came.
   * </pre>
   */
  public static final class LeaseServiceStub
      extends io.grpc.stub.AbstractAsyncStub<LeaseServiceStub> {
    private LeaseServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected LeaseServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new LeaseServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * Acquire a resource. Either fails fast (ABORTED, reason RESOURCE_HELD) when it is held, or waits in
     * FIFO order until it is granted, the call's deadline or wait_timeout passes (DEADLINE_EXCEEDED), or
     * the caller cancels. A waiter that gives up leaves nothing behind. While the resource is in a
     * lock-delay (AcquireRequest.lock_delay), nobody is granted it: fail fast answers ABORTED, reason
     * LOCK_DELAY, and waiters are granted in order once the delay ends.
     * </pre>
     */
    public void acquire(io.fencekeeper.v1.AcquireRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.AcquireResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getAcquireMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Keep leases alive. Send a KeepAliveRequest for a lease whenever you want it renewed (every third of
     * its TTL is usual); each gets one KeepAliveResponse. One stream may carry any number of leases.
     * </pre>
     */
    public io.grpc.stub.StreamObserver<io.fencekeeper.v1.KeepAliveRequest> keepAlive(
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.KeepAliveResponse> responseObserver) {
      return io.grpc.stub.ClientCalls.asyncBidiStreamingCall(
          getChannel().newCall(getKeepAliveMethod(), getCallOptions()), responseObserver);
    }

    /**
     * <pre>
     * Renew one lease once. NOT_FOUND (reason LEASE_NOT_FOUND) if it expired or never existed.
     * </pre>
     */
    public void renew(io.fencekeeper.v1.RenewRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.RenewResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getRenewMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Give up a lease now, so that the next waiter is granted at once. NOT_FOUND if it is already gone.
     * A holding that was preempted is given up too (OK): its lease ends at once.
     * </pre>
     */
    public void release(io.fencekeeper.v1.ReleaseRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.ReleaseResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getReleaseMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Describe who holds a resource, with which token, for how much longer, and how many wait. An answer
     * stays within the server's answer budget (--max-answer-bytes, 1 MiB by default): a resource whose
     * shared holders' values pass it is described a page of holders at a time (holders_page_token).
     * Holders' tokens carry their signature only for the caller that is their principal (FencingToken.signature).
     * </pre>
     */
    public void describe(io.fencekeeper.v1.DescribeRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.DescribeResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getDescribeMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * List the resources in use, whose names start with a prefix, in name order, a page at a time, each
     * as Describe describes it: held (exclusively or shared), waited for, or serving a lock-delay. With
     * a policy, only the resources the caller may observe are listed (the others are left out, not
     * refused). For consoles and operators: "who holds what, and who waits". A page ends at page_size
     * resources or at the server's answer budget (--max-answer-bytes, 1 MiB by default), whichever comes
     * first, and holds at least one resource.
     * </pre>
     */
    public void listResources(io.fencekeeper.v1.ListResourcesRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.ListResourcesResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListResourcesMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Stream the ownership changes of one resource, starting with its current state: each new holder, and
     * each new value a holder proclaims (Proclaim), in the order etcd committed them. The server keeps
     * at most --max-stream-buffer-bytes (2 MiB by default) of changes its reader has not taken yet; a
     * reader that falls further behind is not cut off: the changes waiting for it are dropped, and the
     * next message it reads is the state at that moment, with missed_changes set (as etcd's watch tells
     * a watcher that fell behind compaction, but the stream goes on).
     * </pre>
     */
    public void observe(io.fencekeeper.v1.ObserveRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.ObserveResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncServerStreamingCall(
          getChannel().newCall(getObserveMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Open a session: one lease that many acquisitions share, as etcd's concurrency.Session and
     * Chubby's sessions do. Acquire with session_id set puts an acquisition on the session instead of
     * on a lease of its own; one renewal of the session (Renew or KeepAlive with the session_id as the
     * lease id) keeps all of them, and when the session expires every one of them is lost at once.
     * Each acquisition on a session still gets a generation of its own, and Release ends one of them.
     * </pre>
     */
    public void openSession(io.fencekeeper.v1.OpenSessionRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.OpenSessionResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getOpenSessionMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Close a session now: every acquisition on it is released, and the next waiters are granted.
     * NOT_FOUND (reason LEASE_NOT_FOUND) if the session expired or was closed already.
     * </pre>
     */
    public void closeSession(io.fencekeeper.v1.CloseSessionRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.CloseSessionResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getCloseSessionMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * The public keys that verify tokens' signatures (FencingToken.signature), so that a resource outside
     * fencekeeper can check a token offline. Every key that signed a token still in use is listed; fetch
     * the list again when a token names a key_id you do not know.
     * </pre>
     */
    public void listTokenKeys(io.fencekeeper.v1.ListTokenKeysRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.ListTokenKeysResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListTokenKeysMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * End the lock-delay being served on a resource (Describe shows held false and lock_delay_until), so
     * that the first waiter is granted at once: for an operator who knows that the lost holder is gone
     * (its machine is off) and will not wait out the delay. Needs the policy verb admin on the resource
     * (without a policy, any caller may). A resource with no lock-delay being served changes nothing and
     * answers lifted false; so does a held one, whose holder's lock-delay starts only if its lease
     * expires (release the holder instead).
     * </pre>
     */
    public void liftLockDelay(io.fencekeeper.v1.LiftLockDelayRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.LiftLockDelayResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getLiftLockDelayMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Change the value published with an acquisition (AcquireRequest.value) without giving it up: a
     * leader announcing a new address, for example. Only the token of the generation that holds the
     * resource now may, and only its principal (with authentication on); the token's lease is not renewed.
     * A token that no longer holds the resource is refused as a stale write is (FAILED_PRECONDITION):
     * STALE_TOKEN when a newer generation has been granted since (or has written), LEASE_NOT_HELD when its
     * lease expired or was released and nobody newer was granted, GENERATION_NOT_ISSUED for a generation
     * never issued. Observe reports the new value. Needs the policy verb acquire on the resource.
     * </pre>
     */
    public void proclaim(io.fencekeeper.v1.ProclaimRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.ProclaimResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getProclaimMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Many independent acquisitions and releases in one call, each answered on its own (as
     * FencedStoreService.Batch does for writes): an op gets exactly the answer, or the error (code,
     * message and ErrorInfo), that the same Acquire or Release alone would have got, and one op's
     * refusal does not touch the others. This is not AcquireAll: nothing here is all or nothing. The ops
     * are concurrent, like as many calls sent at once; the server commits the grants and releases that
     * arrive together in as few etcd transactions as it can. The call answers when every op has its
     * answer, so an acquisition with wait holds up the answers of the others: clients send ops that do
     * not wait (and send an Acquire with wait alone).
     * Each op is authorized on its own resource (the verb acquire; a release by an admin of the
     * resource as Release alone): a denied op is answered PERMISSION_DENIED on its own. An acquisition
     * with preempt is refused on its own (INVALID_ARGUMENT): preempt with Acquire alone. Each
     * acquisition with wait takes one of the caller's waiting-Acquire slots while it waits.
     * The call itself fails only when the batch as a whole cannot be taken: INVALID_ARGUMENT (reason
     * BATCH_TOO_LARGE) over 1000 ops or 2 MiB of values (AcquireRequest.value), or with no ops; or with
     * the codes any call may get. When the call fails with UNAVAILABLE, DEADLINE_EXCEEDED or CANCELLED,
     * each op may or may not have taken effect: an acquisition granted then ends with its lease's TTL
     * (or its session), since its token never reached the caller. A server that predates LeaseBatch
     * answers UNIMPLEMENTED: send the ops one by one.
     * </pre>
     */
    public void leaseBatch(io.fencekeeper.v1.LeaseBatchRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.LeaseBatchResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getLeaseBatchMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Acquire several resources, all or nothing, as Curator's InterProcessMultiLock does: each resource
     * is acquired exclusively, one after the other in a fixed order (their names' UTF-8 bytes, ascending),
     * so that two callers asking for overlapping sets never wait for each other in a cycle. With wait,
     * the call waits (each resource in FIFO order, as Acquire does) until it holds them all, or until the
     * call's deadline or wait_timeout passes for the whole set. Without wait, it fails fast on the first
     * resource that is held. On any failure, the resources it had acquired are released before it
     * answers (the next waiters are granted), and the answer is the failure of the resource that failed,
     * as Acquire alone would give it (ABORTED RESOURCE_HELD, DEADLINE_EXCEEDED, ...). If the server
     * cannot release them (etcd unavailable), they end with their leases' TTL or with the session.
     * Each resource gets an acquisition of its own: its own generation and token, on a lease of its own
     * (each renewed and released on its own) or on the session given. Authorized as Acquire on every
     * resource: one denied resource refuses the call (PERMISSION_DENIED), before anything is acquired.
     * INVALID_ARGUMENT for no resources, more than 100, a resource named twice, or a name that cannot
     * be a resource; then nothing is acquired. With wait, the call takes one waiting-Acquire slot.
     * </pre>
     */
    public void acquireAll(io.fencekeeper.v1.AcquireAllRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.AcquireAllResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getAcquireAllMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service LeaseService.
   * <pre>
   * LeaseService hands out leases on named resources, each with a fencing token.
   * A lease lasts for its TTL unless its holder renews it (Renew, or a message on a KeepAlive stream).
   * The server never renews a lease on its own: a holder that is paused, partitioned or dead loses its
   * lease when the TTL runs out, and the next acquisition gets a greater token. Closing a KeepAlive
   * stream releases nothing. A renewal whose answer arrives late proves nothing: measure how long you
   * may act from the moment you sent the renewal, not from when its answer came.
   * </pre>
   */
  public static final class LeaseServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<LeaseServiceBlockingV2Stub> {
    private LeaseServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected LeaseServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new LeaseServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * Acquire a resource. Either fails fast (ABORTED, reason RESOURCE_HELD) when it is held, or waits in
     * FIFO order until it is granted, the call's deadline or wait_timeout passes (DEADLINE_EXCEEDED), or
     * the caller cancels. A waiter that gives up leaves nothing behind. While the resource is in a
     * lock-delay (AcquireRequest.lock_delay), nobody is granted it: fail fast answers ABORTED, reason
     * LOCK_DELAY, and waiters are granted in order once the delay ends.
     * </pre>
     */
    public io.fencekeeper.v1.AcquireResponse acquire(io.fencekeeper.v1.AcquireRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getAcquireMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Keep leases alive. Send a KeepAliveRequest for a lease whenever you want it renewed (every third of
     * its TTL is usual); each gets one KeepAliveResponse. One stream may carry any number of leases.
     * </pre>
     */
    @io.grpc.ExperimentalApi("https://github.com/grpc/grpc-java/issues/10918")
    public io.grpc.stub.BlockingClientCall<io.fencekeeper.v1.KeepAliveRequest, io.fencekeeper.v1.KeepAliveResponse>
        keepAlive() {
      return io.grpc.stub.ClientCalls.blockingBidiStreamingCall(
          getChannel(), getKeepAliveMethod(), getCallOptions());
    }

    /**
     * <pre>
     * Renew one lease once. NOT_FOUND (reason LEASE_NOT_FOUND) if it expired or never existed.
     * </pre>
     */
    public io.fencekeeper.v1.RenewResponse renew(io.fencekeeper.v1.RenewRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getRenewMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Give up a lease now, so that the next waiter is granted at once. NOT_FOUND if it is already gone.
     * A holding that was preempted is given up too (OK): its lease ends at once.
     * </pre>
     */
    public io.fencekeeper.v1.ReleaseResponse release(io.fencekeeper.v1.ReleaseRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getReleaseMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Describe who holds a resource, with which token, for how much longer, and how many wait. An answer
     * stays within the server's answer budget (--max-answer-bytes, 1 MiB by default): a resource whose
     * shared holders' values pass it is described a page of holders at a time (holders_page_token).
     * Holders' tokens carry their signature only for the caller that is their principal (FencingToken.signature).
     * </pre>
     */
    public io.fencekeeper.v1.DescribeResponse describe(io.fencekeeper.v1.DescribeRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getDescribeMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * List the resources in use, whose names start with a prefix, in name order, a page at a time, each
     * as Describe describes it: held (exclusively or shared), waited for, or serving a lock-delay. With
     * a policy, only the resources the caller may observe are listed (the others are left out, not
     * refused). For consoles and operators: "who holds what, and who waits". A page ends at page_size
     * resources or at the server's answer budget (--max-answer-bytes, 1 MiB by default), whichever comes
     * first, and holds at least one resource.
     * </pre>
     */
    public io.fencekeeper.v1.ListResourcesResponse listResources(io.fencekeeper.v1.ListResourcesRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListResourcesMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Stream the ownership changes of one resource, starting with its current state: each new holder, and
     * each new value a holder proclaims (Proclaim), in the order etcd committed them. The server keeps
     * at most --max-stream-buffer-bytes (2 MiB by default) of changes its reader has not taken yet; a
     * reader that falls further behind is not cut off: the changes waiting for it are dropped, and the
     * next message it reads is the state at that moment, with missed_changes set (as etcd's watch tells
     * a watcher that fell behind compaction, but the stream goes on).
     * </pre>
     */
    @io.grpc.ExperimentalApi("https://github.com/grpc/grpc-java/issues/10918")
    public io.grpc.stub.BlockingClientCall<?, io.fencekeeper.v1.ObserveResponse>
        observe(io.fencekeeper.v1.ObserveRequest request) {
      return io.grpc.stub.ClientCalls.blockingV2ServerStreamingCall(
          getChannel(), getObserveMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Open a session: one lease that many acquisitions share, as etcd's concurrency.Session and
     * Chubby's sessions do. Acquire with session_id set puts an acquisition on the session instead of
     * on a lease of its own; one renewal of the session (Renew or KeepAlive with the session_id as the
     * lease id) keeps all of them, and when the session expires every one of them is lost at once.
     * Each acquisition on a session still gets a generation of its own, and Release ends one of them.
     * </pre>
     */
    public io.fencekeeper.v1.OpenSessionResponse openSession(io.fencekeeper.v1.OpenSessionRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getOpenSessionMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Close a session now: every acquisition on it is released, and the next waiters are granted.
     * NOT_FOUND (reason LEASE_NOT_FOUND) if the session expired or was closed already.
     * </pre>
     */
    public io.fencekeeper.v1.CloseSessionResponse closeSession(io.fencekeeper.v1.CloseSessionRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getCloseSessionMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * The public keys that verify tokens' signatures (FencingToken.signature), so that a resource outside
     * fencekeeper can check a token offline. Every key that signed a token still in use is listed; fetch
     * the list again when a token names a key_id you do not know.
     * </pre>
     */
    public io.fencekeeper.v1.ListTokenKeysResponse listTokenKeys(io.fencekeeper.v1.ListTokenKeysRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListTokenKeysMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * End the lock-delay being served on a resource (Describe shows held false and lock_delay_until), so
     * that the first waiter is granted at once: for an operator who knows that the lost holder is gone
     * (its machine is off) and will not wait out the delay. Needs the policy verb admin on the resource
     * (without a policy, any caller may). A resource with no lock-delay being served changes nothing and
     * answers lifted false; so does a held one, whose holder's lock-delay starts only if its lease
     * expires (release the holder instead).
     * </pre>
     */
    public io.fencekeeper.v1.LiftLockDelayResponse liftLockDelay(io.fencekeeper.v1.LiftLockDelayRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getLiftLockDelayMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Change the value published with an acquisition (AcquireRequest.value) without giving it up: a
     * leader announcing a new address, for example. Only the token of the generation that holds the
     * resource now may, and only its principal (with authentication on); the token's lease is not renewed.
     * A token that no longer holds the resource is refused as a stale write is (FAILED_PRECONDITION):
     * STALE_TOKEN when a newer generation has been granted since (or has written), LEASE_NOT_HELD when its
     * lease expired or was released and nobody newer was granted, GENERATION_NOT_ISSUED for a generation
     * never issued. Observe reports the new value. Needs the policy verb acquire on the resource.
     * </pre>
     */
    public io.fencekeeper.v1.ProclaimResponse proclaim(io.fencekeeper.v1.ProclaimRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getProclaimMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Many independent acquisitions and releases in one call, each answered on its own (as
     * FencedStoreService.Batch does for writes): an op gets exactly the answer, or the error (code,
     * message and ErrorInfo), that the same Acquire or Release alone would have got, and one op's
     * refusal does not touch the others. This is not AcquireAll: nothing here is all or nothing. The ops
     * are concurrent, like as many calls sent at once; the server commits the grants and releases that
     * arrive together in as few etcd transactions as it can. The call answers when every op has its
     * answer, so an acquisition with wait holds up the answers of the others: clients send ops that do
     * not wait (and send an Acquire with wait alone).
     * Each op is authorized on its own resource (the verb acquire; a release by an admin of the
     * resource as Release alone): a denied op is answered PERMISSION_DENIED on its own. An acquisition
     * with preempt is refused on its own (INVALID_ARGUMENT): preempt with Acquire alone. Each
     * acquisition with wait takes one of the caller's waiting-Acquire slots while it waits.
     * The call itself fails only when the batch as a whole cannot be taken: INVALID_ARGUMENT (reason
     * BATCH_TOO_LARGE) over 1000 ops or 2 MiB of values (AcquireRequest.value), or with no ops; or with
     * the codes any call may get. When the call fails with UNAVAILABLE, DEADLINE_EXCEEDED or CANCELLED,
     * each op may or may not have taken effect: an acquisition granted then ends with its lease's TTL
     * (or its session), since its token never reached the caller. A server that predates LeaseBatch
     * answers UNIMPLEMENTED: send the ops one by one.
     * </pre>
     */
    public io.fencekeeper.v1.LeaseBatchResponse leaseBatch(io.fencekeeper.v1.LeaseBatchRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getLeaseBatchMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Acquire several resources, all or nothing, as Curator's InterProcessMultiLock does: each resource
     * is acquired exclusively, one after the other in a fixed order (their names' UTF-8 bytes, ascending),
     * so that two callers asking for overlapping sets never wait for each other in a cycle. With wait,
     * the call waits (each resource in FIFO order, as Acquire does) until it holds them all, or until the
     * call's deadline or wait_timeout passes for the whole set. Without wait, it fails fast on the first
     * resource that is held. On any failure, the resources it had acquired are released before it
     * answers (the next waiters are granted), and the answer is the failure of the resource that failed,
     * as Acquire alone would give it (ABORTED RESOURCE_HELD, DEADLINE_EXCEEDED, ...). If the server
     * cannot release them (etcd unavailable), they end with their leases' TTL or with the session.
     * Each resource gets an acquisition of its own: its own generation and token, on a lease of its own
     * (each renewed and released on its own) or on the session given. Authorized as Acquire on every
     * resource: one denied resource refuses the call (PERMISSION_DENIED), before anything is acquired.
     * INVALID_ARGUMENT for no resources, more than 100, a resource named twice, or a name that cannot
     * be a resource; then nothing is acquired. With wait, the call takes one waiting-Acquire slot.
     * </pre>
     */
    public io.fencekeeper.v1.AcquireAllResponse acquireAll(io.fencekeeper.v1.AcquireAllRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getAcquireAllMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service LeaseService.
   * <pre>
   * LeaseService hands out leases on named resources, each with a fencing token.
   * A lease lasts for its TTL unless its holder renews it (Renew, or a message on a KeepAlive stream).
   * The server never renews a lease on its own: a holder that is paused, partitioned or dead loses its
   * lease when the TTL runs out, and the next acquisition gets a greater token. Closing a KeepAlive
   * stream releases nothing. A renewal whose answer arrives late proves nothing: measure how long you
   * may act from the moment you sent the renewal, not from when its answer came.
   * </pre>
   */
  public static final class LeaseServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<LeaseServiceBlockingStub> {
    private LeaseServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected LeaseServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new LeaseServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * Acquire a resource. Either fails fast (ABORTED, reason RESOURCE_HELD) when it is held, or waits in
     * FIFO order until it is granted, the call's deadline or wait_timeout passes (DEADLINE_EXCEEDED), or
     * the caller cancels. A waiter that gives up leaves nothing behind. While the resource is in a
     * lock-delay (AcquireRequest.lock_delay), nobody is granted it: fail fast answers ABORTED, reason
     * LOCK_DELAY, and waiters are granted in order once the delay ends.
     * </pre>
     */
    public io.fencekeeper.v1.AcquireResponse acquire(io.fencekeeper.v1.AcquireRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getAcquireMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Renew one lease once. NOT_FOUND (reason LEASE_NOT_FOUND) if it expired or never existed.
     * </pre>
     */
    public io.fencekeeper.v1.RenewResponse renew(io.fencekeeper.v1.RenewRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getRenewMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Give up a lease now, so that the next waiter is granted at once. NOT_FOUND if it is already gone.
     * A holding that was preempted is given up too (OK): its lease ends at once.
     * </pre>
     */
    public io.fencekeeper.v1.ReleaseResponse release(io.fencekeeper.v1.ReleaseRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getReleaseMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Describe who holds a resource, with which token, for how much longer, and how many wait. An answer
     * stays within the server's answer budget (--max-answer-bytes, 1 MiB by default): a resource whose
     * shared holders' values pass it is described a page of holders at a time (holders_page_token).
     * Holders' tokens carry their signature only for the caller that is their principal (FencingToken.signature).
     * </pre>
     */
    public io.fencekeeper.v1.DescribeResponse describe(io.fencekeeper.v1.DescribeRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getDescribeMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * List the resources in use, whose names start with a prefix, in name order, a page at a time, each
     * as Describe describes it: held (exclusively or shared), waited for, or serving a lock-delay. With
     * a policy, only the resources the caller may observe are listed (the others are left out, not
     * refused). For consoles and operators: "who holds what, and who waits". A page ends at page_size
     * resources or at the server's answer budget (--max-answer-bytes, 1 MiB by default), whichever comes
     * first, and holds at least one resource.
     * </pre>
     */
    public io.fencekeeper.v1.ListResourcesResponse listResources(io.fencekeeper.v1.ListResourcesRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListResourcesMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Stream the ownership changes of one resource, starting with its current state: each new holder, and
     * each new value a holder proclaims (Proclaim), in the order etcd committed them. The server keeps
     * at most --max-stream-buffer-bytes (2 MiB by default) of changes its reader has not taken yet; a
     * reader that falls further behind is not cut off: the changes waiting for it are dropped, and the
     * next message it reads is the state at that moment, with missed_changes set (as etcd's watch tells
     * a watcher that fell behind compaction, but the stream goes on).
     * </pre>
     */
    public java.util.Iterator<io.fencekeeper.v1.ObserveResponse> observe(
        io.fencekeeper.v1.ObserveRequest request) {
      return io.grpc.stub.ClientCalls.blockingServerStreamingCall(
          getChannel(), getObserveMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Open a session: one lease that many acquisitions share, as etcd's concurrency.Session and
     * Chubby's sessions do. Acquire with session_id set puts an acquisition on the session instead of
     * on a lease of its own; one renewal of the session (Renew or KeepAlive with the session_id as the
     * lease id) keeps all of them, and when the session expires every one of them is lost at once.
     * Each acquisition on a session still gets a generation of its own, and Release ends one of them.
     * </pre>
     */
    public io.fencekeeper.v1.OpenSessionResponse openSession(io.fencekeeper.v1.OpenSessionRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getOpenSessionMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Close a session now: every acquisition on it is released, and the next waiters are granted.
     * NOT_FOUND (reason LEASE_NOT_FOUND) if the session expired or was closed already.
     * </pre>
     */
    public io.fencekeeper.v1.CloseSessionResponse closeSession(io.fencekeeper.v1.CloseSessionRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getCloseSessionMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * The public keys that verify tokens' signatures (FencingToken.signature), so that a resource outside
     * fencekeeper can check a token offline. Every key that signed a token still in use is listed; fetch
     * the list again when a token names a key_id you do not know.
     * </pre>
     */
    public io.fencekeeper.v1.ListTokenKeysResponse listTokenKeys(io.fencekeeper.v1.ListTokenKeysRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListTokenKeysMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * End the lock-delay being served on a resource (Describe shows held false and lock_delay_until), so
     * that the first waiter is granted at once: for an operator who knows that the lost holder is gone
     * (its machine is off) and will not wait out the delay. Needs the policy verb admin on the resource
     * (without a policy, any caller may). A resource with no lock-delay being served changes nothing and
     * answers lifted false; so does a held one, whose holder's lock-delay starts only if its lease
     * expires (release the holder instead).
     * </pre>
     */
    public io.fencekeeper.v1.LiftLockDelayResponse liftLockDelay(io.fencekeeper.v1.LiftLockDelayRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getLiftLockDelayMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Change the value published with an acquisition (AcquireRequest.value) without giving it up: a
     * leader announcing a new address, for example. Only the token of the generation that holds the
     * resource now may, and only its principal (with authentication on); the token's lease is not renewed.
     * A token that no longer holds the resource is refused as a stale write is (FAILED_PRECONDITION):
     * STALE_TOKEN when a newer generation has been granted since (or has written), LEASE_NOT_HELD when its
     * lease expired or was released and nobody newer was granted, GENERATION_NOT_ISSUED for a generation
     * never issued. Observe reports the new value. Needs the policy verb acquire on the resource.
     * </pre>
     */
    public io.fencekeeper.v1.ProclaimResponse proclaim(io.fencekeeper.v1.ProclaimRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getProclaimMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Many independent acquisitions and releases in one call, each answered on its own (as
     * FencedStoreService.Batch does for writes): an op gets exactly the answer, or the error (code,
     * message and ErrorInfo), that the same Acquire or Release alone would have got, and one op's
     * refusal does not touch the others. This is not AcquireAll: nothing here is all or nothing. The ops
     * are concurrent, like as many calls sent at once; the server commits the grants and releases that
     * arrive together in as few etcd transactions as it can. The call answers when every op has its
     * answer, so an acquisition with wait holds up the answers of the others: clients send ops that do
     * not wait (and send an Acquire with wait alone).
     * Each op is authorized on its own resource (the verb acquire; a release by an admin of the
     * resource as Release alone): a denied op is answered PERMISSION_DENIED on its own. An acquisition
     * with preempt is refused on its own (INVALID_ARGUMENT): preempt with Acquire alone. Each
     * acquisition with wait takes one of the caller's waiting-Acquire slots while it waits.
     * The call itself fails only when the batch as a whole cannot be taken: INVALID_ARGUMENT (reason
     * BATCH_TOO_LARGE) over 1000 ops or 2 MiB of values (AcquireRequest.value), or with no ops; or with
     * the codes any call may get. When the call fails with UNAVAILABLE, DEADLINE_EXCEEDED or CANCELLED,
     * each op may or may not have taken effect: an acquisition granted then ends with its lease's TTL
     * (or its session), since its token never reached the caller. A server that predates LeaseBatch
     * answers UNIMPLEMENTED: send the ops one by one.
     * </pre>
     */
    public io.fencekeeper.v1.LeaseBatchResponse leaseBatch(io.fencekeeper.v1.LeaseBatchRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getLeaseBatchMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Acquire several resources, all or nothing, as Curator's InterProcessMultiLock does: each resource
     * is acquired exclusively, one after the other in a fixed order (their names' UTF-8 bytes, ascending),
     * so that two callers asking for overlapping sets never wait for each other in a cycle. With wait,
     * the call waits (each resource in FIFO order, as Acquire does) until it holds them all, or until the
     * call's deadline or wait_timeout passes for the whole set. Without wait, it fails fast on the first
     * resource that is held. On any failure, the resources it had acquired are released before it
     * answers (the next waiters are granted), and the answer is the failure of the resource that failed,
     * as Acquire alone would give it (ABORTED RESOURCE_HELD, DEADLINE_EXCEEDED, ...). If the server
     * cannot release them (etcd unavailable), they end with their leases' TTL or with the session.
     * Each resource gets an acquisition of its own: its own generation and token, on a lease of its own
     * (each renewed and released on its own) or on the session given. Authorized as Acquire on every
     * resource: one denied resource refuses the call (PERMISSION_DENIED), before anything is acquired.
     * INVALID_ARGUMENT for no resources, more than 100, a resource named twice, or a name that cannot
     * be a resource; then nothing is acquired. With wait, the call takes one waiting-Acquire slot.
     * </pre>
     */
    public io.fencekeeper.v1.AcquireAllResponse acquireAll(io.fencekeeper.v1.AcquireAllRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getAcquireAllMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service LeaseService.
   * <pre>
   * LeaseService hands out leases on named resources, each with a fencing token.
   * A lease lasts for its TTL unless its holder renews it (Renew, or a message on a KeepAlive stream).
   * The server never renews a lease on its own: a holder that is paused, partitioned or dead loses its
   * lease when the TTL runs out, and the next acquisition gets a greater token. Closing a KeepAlive
   * stream releases nothing. A renewal whose answer arrives late proves nothing: measure how long you
   * may act from the moment you sent the renewal, not from when its answer came.
   * </pre>
   */
  public static final class LeaseServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<LeaseServiceFutureStub> {
    private LeaseServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected LeaseServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new LeaseServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * Acquire a resource. Either fails fast (ABORTED, reason RESOURCE_HELD) when it is held, or waits in
     * FIFO order until it is granted, the call's deadline or wait_timeout passes (DEADLINE_EXCEEDED), or
     * the caller cancels. A waiter that gives up leaves nothing behind. While the resource is in a
     * lock-delay (AcquireRequest.lock_delay), nobody is granted it: fail fast answers ABORTED, reason
     * LOCK_DELAY, and waiters are granted in order once the delay ends.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.fencekeeper.v1.AcquireResponse> acquire(
        io.fencekeeper.v1.AcquireRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getAcquireMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Renew one lease once. NOT_FOUND (reason LEASE_NOT_FOUND) if it expired or never existed.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.fencekeeper.v1.RenewResponse> renew(
        io.fencekeeper.v1.RenewRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getRenewMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Give up a lease now, so that the next waiter is granted at once. NOT_FOUND if it is already gone.
     * A holding that was preempted is given up too (OK): its lease ends at once.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.fencekeeper.v1.ReleaseResponse> release(
        io.fencekeeper.v1.ReleaseRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getReleaseMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Describe who holds a resource, with which token, for how much longer, and how many wait. An answer
     * stays within the server's answer budget (--max-answer-bytes, 1 MiB by default): a resource whose
     * shared holders' values pass it is described a page of holders at a time (holders_page_token).
     * Holders' tokens carry their signature only for the caller that is their principal (FencingToken.signature).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.fencekeeper.v1.DescribeResponse> describe(
        io.fencekeeper.v1.DescribeRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getDescribeMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * List the resources in use, whose names start with a prefix, in name order, a page at a time, each
     * as Describe describes it: held (exclusively or shared), waited for, or serving a lock-delay. With
     * a policy, only the resources the caller may observe are listed (the others are left out, not
     * refused). For consoles and operators: "who holds what, and who waits". A page ends at page_size
     * resources or at the server's answer budget (--max-answer-bytes, 1 MiB by default), whichever comes
     * first, and holds at least one resource.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.fencekeeper.v1.ListResourcesResponse> listResources(
        io.fencekeeper.v1.ListResourcesRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListResourcesMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Open a session: one lease that many acquisitions share, as etcd's concurrency.Session and
     * Chubby's sessions do. Acquire with session_id set puts an acquisition on the session instead of
     * on a lease of its own; one renewal of the session (Renew or KeepAlive with the session_id as the
     * lease id) keeps all of them, and when the session expires every one of them is lost at once.
     * Each acquisition on a session still gets a generation of its own, and Release ends one of them.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.fencekeeper.v1.OpenSessionResponse> openSession(
        io.fencekeeper.v1.OpenSessionRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getOpenSessionMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Close a session now: every acquisition on it is released, and the next waiters are granted.
     * NOT_FOUND (reason LEASE_NOT_FOUND) if the session expired or was closed already.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.fencekeeper.v1.CloseSessionResponse> closeSession(
        io.fencekeeper.v1.CloseSessionRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getCloseSessionMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * The public keys that verify tokens' signatures (FencingToken.signature), so that a resource outside
     * fencekeeper can check a token offline. Every key that signed a token still in use is listed; fetch
     * the list again when a token names a key_id you do not know.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.fencekeeper.v1.ListTokenKeysResponse> listTokenKeys(
        io.fencekeeper.v1.ListTokenKeysRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListTokenKeysMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * End the lock-delay being served on a resource (Describe shows held false and lock_delay_until), so
     * that the first waiter is granted at once: for an operator who knows that the lost holder is gone
     * (its machine is off) and will not wait out the delay. Needs the policy verb admin on the resource
     * (without a policy, any caller may). A resource with no lock-delay being served changes nothing and
     * answers lifted false; so does a held one, whose holder's lock-delay starts only if its lease
     * expires (release the holder instead).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.fencekeeper.v1.LiftLockDelayResponse> liftLockDelay(
        io.fencekeeper.v1.LiftLockDelayRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getLiftLockDelayMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Change the value published with an acquisition (AcquireRequest.value) without giving it up: a
     * leader announcing a new address, for example. Only the token of the generation that holds the
     * resource now may, and only its principal (with authentication on); the token's lease is not renewed.
     * A token that no longer holds the resource is refused as a stale write is (FAILED_PRECONDITION):
     * STALE_TOKEN when a newer generation has been granted since (or has written), LEASE_NOT_HELD when its
     * lease expired or was released and nobody newer was granted, GENERATION_NOT_ISSUED for a generation
     * never issued. Observe reports the new value. Needs the policy verb acquire on the resource.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.fencekeeper.v1.ProclaimResponse> proclaim(
        io.fencekeeper.v1.ProclaimRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getProclaimMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Many independent acquisitions and releases in one call, each answered on its own (as
     * FencedStoreService.Batch does for writes): an op gets exactly the answer, or the error (code,
     * message and ErrorInfo), that the same Acquire or Release alone would have got, and one op's
     * refusal does not touch the others. This is not AcquireAll: nothing here is all or nothing. The ops
     * are concurrent, like as many calls sent at once; the server commits the grants and releases that
     * arrive together in as few etcd transactions as it can. The call answers when every op has its
     * answer, so an acquisition with wait holds up the answers of the others: clients send ops that do
     * not wait (and send an Acquire with wait alone).
     * Each op is authorized on its own resource (the verb acquire; a release by an admin of the
     * resource as Release alone): a denied op is answered PERMISSION_DENIED on its own. An acquisition
     * with preempt is refused on its own (INVALID_ARGUMENT): preempt with Acquire alone. Each
     * acquisition with wait takes one of the caller's waiting-Acquire slots while it waits.
     * The call itself fails only when the batch as a whole cannot be taken: INVALID_ARGUMENT (reason
     * BATCH_TOO_LARGE) over 1000 ops or 2 MiB of values (AcquireRequest.value), or with no ops; or with
     * the codes any call may get. When the call fails with UNAVAILABLE, DEADLINE_EXCEEDED or CANCELLED,
     * each op may or may not have taken effect: an acquisition granted then ends with its lease's TTL
     * (or its session), since its token never reached the caller. A server that predates LeaseBatch
     * answers UNIMPLEMENTED: send the ops one by one.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.fencekeeper.v1.LeaseBatchResponse> leaseBatch(
        io.fencekeeper.v1.LeaseBatchRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getLeaseBatchMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Acquire several resources, all or nothing, as Curator's InterProcessMultiLock does: each resource
     * is acquired exclusively, one after the other in a fixed order (their names' UTF-8 bytes, ascending),
     * so that two callers asking for overlapping sets never wait for each other in a cycle. With wait,
     * the call waits (each resource in FIFO order, as Acquire does) until it holds them all, or until the
     * call's deadline or wait_timeout passes for the whole set. Without wait, it fails fast on the first
     * resource that is held. On any failure, the resources it had acquired are released before it
     * answers (the next waiters are granted), and the answer is the failure of the resource that failed,
     * as Acquire alone would give it (ABORTED RESOURCE_HELD, DEADLINE_EXCEEDED, ...). If the server
     * cannot release them (etcd unavailable), they end with their leases' TTL or with the session.
     * Each resource gets an acquisition of its own: its own generation and token, on a lease of its own
     * (each renewed and released on its own) or on the session given. Authorized as Acquire on every
     * resource: one denied resource refuses the call (PERMISSION_DENIED), before anything is acquired.
     * INVALID_ARGUMENT for no resources, more than 100, a resource named twice, or a name that cannot
     * be a resource; then nothing is acquired. With wait, the call takes one waiting-Acquire slot.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.fencekeeper.v1.AcquireAllResponse> acquireAll(
        io.fencekeeper.v1.AcquireAllRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getAcquireAllMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_ACQUIRE = 0;
  private static final int METHODID_RENEW = 1;
  private static final int METHODID_RELEASE = 2;
  private static final int METHODID_DESCRIBE = 3;
  private static final int METHODID_LIST_RESOURCES = 4;
  private static final int METHODID_OBSERVE = 5;
  private static final int METHODID_OPEN_SESSION = 6;
  private static final int METHODID_CLOSE_SESSION = 7;
  private static final int METHODID_LIST_TOKEN_KEYS = 8;
  private static final int METHODID_LIFT_LOCK_DELAY = 9;
  private static final int METHODID_PROCLAIM = 10;
  private static final int METHODID_LEASE_BATCH = 11;
  private static final int METHODID_ACQUIRE_ALL = 12;
  private static final int METHODID_KEEP_ALIVE = 13;

  private static final class MethodHandlers<Req, Resp> implements
      io.grpc.stub.ServerCalls.UnaryMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.ServerStreamingMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.ClientStreamingMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.BidiStreamingMethod<Req, Resp> {
    private final AsyncService serviceImpl;
    private final int methodId;

    MethodHandlers(AsyncService serviceImpl, int methodId) {
      this.serviceImpl = serviceImpl;
      this.methodId = methodId;
    }

    @java.lang.Override
    @java.lang.SuppressWarnings("unchecked")
    public void invoke(Req request, io.grpc.stub.StreamObserver<Resp> responseObserver) {
      switch (methodId) {
        case METHODID_ACQUIRE:
          serviceImpl.acquire((io.fencekeeper.v1.AcquireRequest) request,
              (io.grpc.stub.StreamObserver<io.fencekeeper.v1.AcquireResponse>) responseObserver);
          break;
        case METHODID_RENEW:
          serviceImpl.renew((io.fencekeeper.v1.RenewRequest) request,
              (io.grpc.stub.StreamObserver<io.fencekeeper.v1.RenewResponse>) responseObserver);
          break;
        case METHODID_RELEASE:
          serviceImpl.release((io.fencekeeper.v1.ReleaseRequest) request,
              (io.grpc.stub.StreamObserver<io.fencekeeper.v1.ReleaseResponse>) responseObserver);
          break;
        case METHODID_DESCRIBE:
          serviceImpl.describe((io.fencekeeper.v1.DescribeRequest) request,
              (io.grpc.stub.StreamObserver<io.fencekeeper.v1.DescribeResponse>) responseObserver);
          break;
        case METHODID_LIST_RESOURCES:
          serviceImpl.listResources((io.fencekeeper.v1.ListResourcesRequest) request,
              (io.grpc.stub.StreamObserver<io.fencekeeper.v1.ListResourcesResponse>) responseObserver);
          break;
        case METHODID_OBSERVE:
          serviceImpl.observe((io.fencekeeper.v1.ObserveRequest) request,
              (io.grpc.stub.StreamObserver<io.fencekeeper.v1.ObserveResponse>) responseObserver);
          break;
        case METHODID_OPEN_SESSION:
          serviceImpl.openSession((io.fencekeeper.v1.OpenSessionRequest) request,
              (io.grpc.stub.StreamObserver<io.fencekeeper.v1.OpenSessionResponse>) responseObserver);
          break;
        case METHODID_CLOSE_SESSION:
          serviceImpl.closeSession((io.fencekeeper.v1.CloseSessionRequest) request,
              (io.grpc.stub.StreamObserver<io.fencekeeper.v1.CloseSessionResponse>) responseObserver);
          break;
        case METHODID_LIST_TOKEN_KEYS:
          serviceImpl.listTokenKeys((io.fencekeeper.v1.ListTokenKeysRequest) request,
              (io.grpc.stub.StreamObserver<io.fencekeeper.v1.ListTokenKeysResponse>) responseObserver);
          break;
        case METHODID_LIFT_LOCK_DELAY:
          serviceImpl.liftLockDelay((io.fencekeeper.v1.LiftLockDelayRequest) request,
              (io.grpc.stub.StreamObserver<io.fencekeeper.v1.LiftLockDelayResponse>) responseObserver);
          break;
        case METHODID_PROCLAIM:
          serviceImpl.proclaim((io.fencekeeper.v1.ProclaimRequest) request,
              (io.grpc.stub.StreamObserver<io.fencekeeper.v1.ProclaimResponse>) responseObserver);
          break;
        case METHODID_LEASE_BATCH:
          serviceImpl.leaseBatch((io.fencekeeper.v1.LeaseBatchRequest) request,
              (io.grpc.stub.StreamObserver<io.fencekeeper.v1.LeaseBatchResponse>) responseObserver);
          break;
        case METHODID_ACQUIRE_ALL:
          serviceImpl.acquireAll((io.fencekeeper.v1.AcquireAllRequest) request,
              (io.grpc.stub.StreamObserver<io.fencekeeper.v1.AcquireAllResponse>) responseObserver);
          break;
        default:
          throw new AssertionError();
      }
    }

    @java.lang.Override
    @java.lang.SuppressWarnings("unchecked")
    public io.grpc.stub.StreamObserver<Req> invoke(
        io.grpc.stub.StreamObserver<Resp> responseObserver) {
      switch (methodId) {
        case METHODID_KEEP_ALIVE:
          return (io.grpc.stub.StreamObserver<Req>) serviceImpl.keepAlive(
              (io.grpc.stub.StreamObserver<io.fencekeeper.v1.KeepAliveResponse>) responseObserver);
        default:
          throw new AssertionError();
      }
    }
  }

  public static final io.grpc.ServerServiceDefinition bindService(AsyncService service) {
    return io.grpc.ServerServiceDefinition.builder(getServiceDescriptor())
        .addMethod(
          getAcquireMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.fencekeeper.v1.AcquireRequest,
              io.fencekeeper.v1.AcquireResponse>(
                service, METHODID_ACQUIRE)))
        .addMethod(
          getKeepAliveMethod(),
          io.grpc.stub.ServerCalls.asyncBidiStreamingCall(
            new MethodHandlers<
              io.fencekeeper.v1.KeepAliveRequest,
              io.fencekeeper.v1.KeepAliveResponse>(
                service, METHODID_KEEP_ALIVE)))
        .addMethod(
          getRenewMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.fencekeeper.v1.RenewRequest,
              io.fencekeeper.v1.RenewResponse>(
                service, METHODID_RENEW)))
        .addMethod(
          getReleaseMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.fencekeeper.v1.ReleaseRequest,
              io.fencekeeper.v1.ReleaseResponse>(
                service, METHODID_RELEASE)))
        .addMethod(
          getDescribeMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.fencekeeper.v1.DescribeRequest,
              io.fencekeeper.v1.DescribeResponse>(
                service, METHODID_DESCRIBE)))
        .addMethod(
          getListResourcesMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.fencekeeper.v1.ListResourcesRequest,
              io.fencekeeper.v1.ListResourcesResponse>(
                service, METHODID_LIST_RESOURCES)))
        .addMethod(
          getObserveMethod(),
          io.grpc.stub.ServerCalls.asyncServerStreamingCall(
            new MethodHandlers<
              io.fencekeeper.v1.ObserveRequest,
              io.fencekeeper.v1.ObserveResponse>(
                service, METHODID_OBSERVE)))
        .addMethod(
          getOpenSessionMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.fencekeeper.v1.OpenSessionRequest,
              io.fencekeeper.v1.OpenSessionResponse>(
                service, METHODID_OPEN_SESSION)))
        .addMethod(
          getCloseSessionMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.fencekeeper.v1.CloseSessionRequest,
              io.fencekeeper.v1.CloseSessionResponse>(
                service, METHODID_CLOSE_SESSION)))
        .addMethod(
          getListTokenKeysMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.fencekeeper.v1.ListTokenKeysRequest,
              io.fencekeeper.v1.ListTokenKeysResponse>(
                service, METHODID_LIST_TOKEN_KEYS)))
        .addMethod(
          getLiftLockDelayMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.fencekeeper.v1.LiftLockDelayRequest,
              io.fencekeeper.v1.LiftLockDelayResponse>(
                service, METHODID_LIFT_LOCK_DELAY)))
        .addMethod(
          getProclaimMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.fencekeeper.v1.ProclaimRequest,
              io.fencekeeper.v1.ProclaimResponse>(
                service, METHODID_PROCLAIM)))
        .addMethod(
          getLeaseBatchMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.fencekeeper.v1.LeaseBatchRequest,
              io.fencekeeper.v1.LeaseBatchResponse>(
                service, METHODID_LEASE_BATCH)))
        .addMethod(
          getAcquireAllMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.fencekeeper.v1.AcquireAllRequest,
              io.fencekeeper.v1.AcquireAllResponse>(
                service, METHODID_ACQUIRE_ALL)))
        .build();
  }

  private static abstract class LeaseServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    LeaseServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return io.fencekeeper.v1.LeaseProto.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("LeaseService");
    }
  }

  private static final class LeaseServiceFileDescriptorSupplier
      extends LeaseServiceBaseDescriptorSupplier {
    LeaseServiceFileDescriptorSupplier() {}
  }

  private static final class LeaseServiceMethodDescriptorSupplier
      extends LeaseServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    LeaseServiceMethodDescriptorSupplier(java.lang.String methodName) {
      this.methodName = methodName;
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.MethodDescriptor getMethodDescriptor() {
      return getServiceDescriptor().findMethodByName(methodName);
    }
  }

  private static volatile io.grpc.ServiceDescriptor serviceDescriptor;

  public static io.grpc.ServiceDescriptor getServiceDescriptor() {
    io.grpc.ServiceDescriptor result = serviceDescriptor;
    if (result == null) {
      synchronized (LeaseServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new LeaseServiceFileDescriptorSupplier())
              .addMethod(getAcquireMethod())
              .addMethod(getKeepAliveMethod())
              .addMethod(getRenewMethod())
              .addMethod(getReleaseMethod())
              .addMethod(getDescribeMethod())
              .addMethod(getListResourcesMethod())
              .addMethod(getObserveMethod())
              .addMethod(getOpenSessionMethod())
              .addMethod(getCloseSessionMethod())
              .addMethod(getListTokenKeysMethod())
              .addMethod(getLiftLockDelayMethod())
              .addMethod(getProclaimMethod())
              .addMethod(getLeaseBatchMethod())
              .addMethod(getAcquireAllMethod())
              .build();
        }
      }
    }
    return result;
  }
}
