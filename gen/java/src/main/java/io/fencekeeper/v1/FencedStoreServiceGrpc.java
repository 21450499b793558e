package io.fencekeeper.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * FencedStoreService is a key-value store that takes part in fencing.
 * Keys live in the namespace of a resource. Each resource has a fence: the greatest generation the
 * store has accepted for it. Every mutation carries a FencingToken; the check against the fence, the
 * write, the fence update and the idempotency record commit in one etcd transaction, or not at all.
 * A refused mutation changes nothing and fails with FAILED_PRECONDITION and a google.rpc.ErrorInfo
 * (reason STALE_TOKEN, LEASE_NOT_HELD or GENERATION_NOT_ISSUED; see ErrorReason).
 * Limits: keys 1 to 1024 bytes of UTF-8 without control characters; values up to 1 MiB; a Txn has a
 * server-configured maximum number of operations (64 by default) and at most 1 MiB of values in all.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class FencedStoreServiceGrpc {

  private FencedStoreServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "fencekeeper.v1.FencedStoreService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<io.fencekeeper.v1.PutRequest,
      io.fencekeeper.v1.PutResponse> getPutMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Put",
      requestType = io.fencekeeper.v1.PutRequest.class,
      responseType = io.fencekeeper.v1.PutResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.fencekeeper.v1.PutRequest,
      io.fencekeeper.v1.PutResponse> getPutMethod() {
    io.grpc.MethodDescriptor<io.fencekeeper.v1.PutRequest, io.fencekeeper.v1.PutResponse> getPutMethod;
    if ((getPutMethod = FencedStoreServiceGrpc.getPutMethod) == null) {
      synchronized (FencedStoreServiceGrpc.class) {
        if ((getPutMethod = FencedStoreServiceGrpc.getPutMethod) == null) {
          FencedStoreServiceGrpc.getPutMethod = getPutMethod =
              io.grpc.MethodDescriptor.<io.fencekeeper.v1.PutRequest, io.fencekeeper.v1.PutResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Put"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.PutRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.PutResponse.getDefaultInstance()))
              .setSchemaDescriptor(new FencedStoreServiceMethodDescriptorSupplier("Put"))
              .build();
        }
      }
    }
    return getPutMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.fencekeeper.v1.GetRequest,
      io.fencekeeper.v1.GetResponse> getGetMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Get",
      requestType = io.fencekeeper.v1.GetRequest.class,
      responseType = io.fencekeeper.v1.GetResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.fencekeeper.v1.GetRequest,
      io.fencekeeper.v1.GetResponse> getGetMethod() {
    io.grpc.MethodDescriptor<io.fencekeeper.v1.GetRequest, io.fencekeeper.v1.GetResponse> getGetMethod;
    if ((getGetMethod = FencedStoreServiceGrpc.getGetMethod) == null) {
      synchronized (FencedStoreServiceGrpc.class) {
        if ((getGetMethod = FencedStoreServiceGrpc.getGetMethod) == null) {
          FencedStoreServiceGrpc.getGetMethod = getGetMethod =
              io.grpc.MethodDescriptor.<io.fencekeeper.v1.GetRequest, io.fencekeeper.v1.GetResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Get"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.GetRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.GetResponse.getDefaultInstance()))
              .setSchemaDescriptor(new FencedStoreServiceMethodDescriptorSupplier("Get"))
              .build();
        }
      }
    }
    return getGetMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.fencekeeper.v1.DeleteRequest,
      io.fencekeeper.v1.DeleteResponse> getDeleteMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Delete",
      requestType = io.fencekeeper.v1.DeleteRequest.class,
      responseType = io.fencekeeper.v1.DeleteResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.fencekeeper.v1.DeleteRequest,
      io.fencekeeper.v1.DeleteResponse> getDeleteMethod() {
    io.grpc.MethodDescriptor<io.fencekeeper.v1.DeleteRequest, io.fencekeeper.v1.DeleteResponse> getDeleteMethod;
    if ((getDeleteMethod = FencedStoreServiceGrpc.getDeleteMethod) == null) {
      synchronized (FencedStoreServiceGrpc.class) {
        if ((getDeleteMethod = FencedStoreServiceGrpc.getDeleteMethod) == null) {
          FencedStoreServiceGrpc.getDeleteMethod = getDeleteMethod =
              io.grpc.MethodDescriptor.<io.fencekeeper.v1.DeleteRequest, io.fencekeeper.v1.DeleteResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Delete"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.DeleteRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.DeleteResponse.getDefaultInstance()))
              .setSchemaDescriptor(new FencedStoreServiceMethodDescriptorSupplier("Delete"))
              .build();
        }
      }
    }
    return getDeleteMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.fencekeeper.v1.TxnRequest,
      io.fencekeeper.v1.TxnResponse> getTxnMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Txn",
      requestType = io.fencekeeper.v1.TxnRequest.class,
      responseType = io.fencekeeper.v1.TxnResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.fencekeeper.v1.TxnRequest,
      io.fencekeeper.v1.TxnResponse> getTxnMethod() {
    io.grpc.MethodDescriptor<io.fencekeeper.v1.TxnRequest, io.fencekeeper.v1.TxnResponse> getTxnMethod;
    if ((getTxnMethod = FencedStoreServiceGrpc.getTxnMethod) == null) {
      synchronized (FencedStoreServiceGrpc.class) {
        if ((getTxnMethod = FencedStoreServiceGrpc.getTxnMethod) == null) {
          FencedStoreServiceGrpc.getTxnMethod = getTxnMethod =
              io.grpc.MethodDescriptor.<io.fencekeeper.v1.TxnRequest, io.fencekeeper.v1.TxnResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Txn"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.TxnRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.TxnResponse.getDefaultInstance()))
              .setSchemaDescriptor(new FencedStoreServiceMethodDescriptorSupplier("Txn"))
              .build();
        }
      }
    }
    return getTxnMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.fencekeeper.v1.RangeRequest,
      io.fencekeeper.v1.RangeResponse> getRangeMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Range",
      requestType = io.fencekeeper.v1.RangeRequest.class,
      responseType = io.fencekeeper.v1.RangeResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.fencekeeper.v1.RangeRequest,
      io.fencekeeper.v1.RangeResponse> getRangeMethod() {
    io.grpc.MethodDescriptor<io.fencekeeper.v1.RangeRequest, io.fencekeeper.v1.RangeResponse> getRangeMethod;
    if ((getRangeMethod = FencedStoreServiceGrpc.getRangeMethod) == null) {
      synchronized (FencedStoreServiceGrpc.class) {
        if ((getRangeMethod = FencedStoreServiceGrpc.getRangeMethod) == null) {
          FencedStoreServiceGrpc.getRangeMethod = getRangeMethod =
              io.grpc.MethodDescriptor.<io.fencekeeper.v1.RangeRequest, io.fencekeeper.v1.RangeResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Range"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.RangeRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.RangeResponse.getDefaultInstance()))
              .setSchemaDescriptor(new FencedStoreServiceMethodDescriptorSupplier("Range"))
              .build();
        }
      }
    }
    return getRangeMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.fencekeeper.v1.GetFenceRequest,
      io.fencekeeper.v1.GetFenceResponse> getGetFenceMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetFence",
      requestType = io.fencekeeper.v1.GetFenceRequest.class,
      responseType = io.fencekeeper.v1.GetFenceResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.fencekeeper.v1.GetFenceRequest,
      io.fencekeeper.v1.GetFenceResponse> getGetFenceMethod() {
    io.grpc.MethodDescriptor<io.fencekeeper.v1.GetFenceRequest, io.fencekeeper.v1.GetFenceResponse> getGetFenceMethod;
    if ((getGetFenceMethod = FencedStoreServiceGrpc.getGetFenceMethod) == null) {
      synchronized (FencedStoreServiceGrpc.class) {
        if ((getGetFenceMethod = FencedStoreServiceGrpc.getGetFenceMethod) == null) {
          FencedStoreServiceGrpc.getGetFenceMethod = getGetFenceMethod =
              io.grpc.MethodDescriptor.<io.fencekeeper.v1.GetFenceRequest, io.fencekeeper.v1.GetFenceResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetFence"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.GetFenceRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.GetFenceResponse.getDefaultInstance()))
              .setSchemaDescriptor(new FencedStoreServiceMethodDescriptorSupplier("GetFence"))
              .build();
        }
      }
    }
    return getGetFenceMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.fencekeeper.v1.BatchRequest,
      io.fencekeeper.v1.BatchResponse> getBatchMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Batch",
      requestType = io.fencekeeper.v1.BatchRequest.class,
      responseType = io.fencekeeper.v1.BatchResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.fencekeeper.v1.BatchRequest,
      io.fencekeeper.v1.BatchResponse> getBatchMethod() {
    io.grpc.MethodDescriptor<io.fencekeeper.v1.BatchRequest, io.fencekeeper.v1.BatchResponse> getBatchMethod;
    if ((getBatchMethod = FencedStoreServiceGrpc.getBatchMethod) == null) {
      synchronized (FencedStoreServiceGrpc.class) {
        if ((getBatchMethod = FencedStoreServiceGrpc.getBatchMethod) == null) {
          FencedStoreServiceGrpc.getBatchMethod = getBatchMethod =
              io.grpc.MethodDescriptor.<io.fencekeeper.v1.BatchRequest, io.fencekeeper.v1.BatchResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Batch"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.BatchRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.fencekeeper.v1.BatchResponse.getDefaultInstance()))
              .setSchemaDescriptor(new FencedStoreServiceMethodDescriptorSupplier("Batch"))
              .build();
        }
      }
    }
    return getBatchMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static FencedStoreServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<FencedStoreServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<FencedStoreServiceStub>() {
        @java.lang.Override
        public FencedStoreServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new FencedStoreServiceStub(channel, callOptions);
        }
      };
    return FencedStoreServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static FencedStoreServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<FencedStoreServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<FencedStoreServiceBlockingV2Stub>() {
        @java.lang.Override
        public FencedStoreServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new FencedStoreServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return FencedStoreServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static FencedStoreServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<FencedStoreServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<FencedStoreServiceBlockingStub>() {
        @java.lang.Override
        public FencedStoreServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new FencedStoreServiceBlockingStub(channel, callOptions);
        }
      };
    return FencedStoreServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static FencedStoreServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<FencedStoreServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<FencedStoreServiceFutureStub>() {
        @java.lang.Override
        public FencedStoreServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new FencedStoreServiceFutureStub(channel, callOptions);
        }
      };
    return FencedStoreServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * FencedStoreService is a key-value store that takes part in fencing.
   * Keys live in the namespace of a resource. Each resource has a fence: the greatest generation the
   * store has accepted for it. Every mutation carries a FencingToken; the check against the fence, the
   * write, the fence update and the idempotency record commit in one etcd transaction, or not at all.
   * A refused mutation changes nothing and fails with FAILED_PRECONDITION and a google.rpc.ErrorInfo
   * (reason STALE_TOKEN, LEASE_NOT_HELD or GENERATION_NOT_ISSUED; see ErrorReason).
   * Limits: keys 1 to 1024 bytes of UTF-8 without control characters; values up to 1 MiB; a Txn has a
   * server-configured maximum number of operations (64 by default) and at most 1 MiB of values in all.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * Write one key under a token.
     * </pre>
     */
    default void put(io.fencekeeper.v1.PutRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.PutResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getPutMethod(), responseObserver);
    }

    /**
     * <pre>
     * Read one key. Needs no token.
     * </pre>
     */
    default void get(io.fencekeeper.v1.GetRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.GetResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetMethod(), responseObserver);
    }

    /**
     * <pre>
     * Delete one key under a token. Deleting a missing key succeeds: afterwards the key is absent either way.
     * </pre>
     */
    default void delete(io.fencekeeper.v1.DeleteRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.DeleteResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getDeleteMethod(), responseObserver);
    }

    /**
     * <pre>
     * Apply several puts and deletes under one token, all or nothing. A key may appear once.
     * </pre>
     */
    default void txn(io.fencekeeper.v1.TxnRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.TxnResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getTxnMethod(), responseObserver);
    }

    /**
     * <pre>
     * List the keys of a resource by prefix, in key order, one page at a time. All pages of one listing
     * read the same snapshot.
     * </pre>
     */
    default void range(io.fencekeeper.v1.RangeRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.RangeResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getRangeMethod(), responseObserver);
    }

    /**
     * <pre>
     * Read a resource's fence: the greatest generation accepted. Needs no token.
     * </pre>
     */
    default void getFence(io.fencekeeper.v1.GetFenceRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.GetFenceResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetFenceMethod(), responseObserver);
    }

    /**
     * <pre>
     * Apply many independent Puts and Deletes in one call, each exactly as if it had been sent alone:
     * each with its own resource, token, fence mode and idempotency key, each checked, authorized,
     * applied all or nothing and answered on its own (a Commit, or the status that Put or Delete would
     * have failed with, ErrorInfo included). One write's refusal does not touch the others; this is not
     * Txn, which stays the atomic form. The writes of a batch are concurrent, like as many calls sent
     * at once: two writes of one key in one batch may apply in either order. Send a write that must
     * follow another after the other's answer.
     * The call itself fails only when the batch as a whole cannot be taken: INVALID_ARGUMENT (reason
     * BATCH_TOO_LARGE) over 1000 writes or 2 MiB of values, or with no writes; or with the codes any
     * call may get (UNAUTHENTICATED, UNAVAILABLE, DEADLINE_EXCEEDED, ...). When the call fails with
     * UNAVAILABLE, DEADLINE_EXCEEDED or CANCELLED, each write may or may not have been applied, each
     * all or nothing: retry with the same idempotency keys to learn which.
     * Why a unary call and not a long-lived stream of writes: a unary call keeps every per-call property
     * that clients in every language already handle (a deadline, authentication, retries with
     * idempotency keys, load balancing over replicas, gRPC-Web and Connect, which have no bidirectional
     * streams), it needs no flow control or fairness of its own, and a broken connection fails only the
     * calls on it. Clients get the batching of a stream by sending, while one Batch is in flight, the
     * writes that arrive meanwhile in the next one; a lone write goes out as a plain Put at once.
     * A server that predates Batch answers UNIMPLEMENTED: send the writes one by one.
     * </pre>
     */
    default void batch(io.fencekeeper.v1.BatchRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.BatchResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getBatchMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service FencedStoreService.
   * <pre>
   * FencedStoreService is a key-value store that takes part in fencing.
   * Keys live in the namespace of a resource. Each resource has a fence: the greatest generation the
   * store has accepted for it. Every mutation carries a FencingToken; the check against the fence, the
   * write, the fence update and the idempotency record commit in one etcd transaction, or not at all.
   * A refused mutation changes nothing and fails with FAILED_PRECONDITION and a google.rpc.ErrorInfo
   * (reason STALE_TOKEN, LEASE_NOT_HELD or GENERATION_NOT_ISSUED; see ErrorReason).
   * Limits: keys 1 to 1024 bytes of UTF-8 without control characters; values up to 1 MiB; a Txn has a
   * server-configured maximum number of operations (64 by default) and at most 1 MiB of values in all.
   * </pre>
   */
  public static abstract class FencedStoreServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return FencedStoreServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service FencedStoreService.
   * <pre>
   * FencedStoreService is a key-value store that takes part in fencing.
   * Keys live in the namespace of a resource. Each resource has a fence: the greatest generation the
   * store has accepted for it. Every mutation carries a FencingToken; the check against the fence, the
   * write, the fence update and the idempotency record commit in one etcd transaction, or not at all.
   * A refused mutation changes nothing and fails with FAILED_PRECONDITION and a google.rpc.ErrorInfo
   * (reason STALE_TOKEN, LEASE_NOT_HELD or GENERATION_NOT_ISSUED; see ErrorReason).
   * Limits: keys 1 to 1024 bytes of UTF-8 without control characters; values up to 1 MiB; a Txn has a
   * server-configured maximum number of operations (64 by default) and at most 1 MiB of values in all.
   * </pre>
   */
  public static final class FencedStoreServiceStub
      extends io.grpc.stub.AbstractAsyncStub<FencedStoreServiceStub> {
    private FencedStoreServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected FencedStoreServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new FencedStoreServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * Write one key under a token.
     * </pre>
     */
    public void put(io.fencekeeper.v1.PutRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.PutResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getPutMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Read one key. Needs no token.
     * </pre>
     */
    public void get(io.fencekeeper.v1.GetRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.GetResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Delete one key under a token. Deleting a missing key succeeds: afterwards the key is absent either way.
     * </pre>
     */
    public void delete(io.fencekeeper.v1.DeleteRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.DeleteResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getDeleteMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Apply several puts and deletes under one token, all or nothing. A key may appear once.
     * </pre>
     */
    public void txn(io.fencekeeper.v1.TxnRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.TxnResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getTxnMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * List the keys of a resource by prefix, in key order, one page at a time. All pages of one listing
     * read the same snapshot.
     * </pre>
     */
    public void range(io.fencekeeper.v1.RangeRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.RangeResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getRangeMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Read a resource's fence: the greatest generation accepted. Needs no token.
     * </pre>
     */
    public void getFence(io.fencekeeper.v1.GetFenceRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.GetFenceResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetFenceMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Apply many independent Puts and Deletes in one call, each exactly as if it had been sent alone:
     * each with its own resource, token, fence mode and idempotency key, each checked, authorized,
     * applied all or nothing and answered on its own (a Commit, or the status that Put or Delete would
     * have failed with, ErrorInfo included). One write's refusal does not touch the others; this is not
     * Txn, which stays the atomic form. The writes of a batch are concurrent, like as many calls sent
     * at once: two writes of one key in one batch may apply in either order. Send a write that must
     * follow another after the other's answer.
     * The call itself fails only when the batch as a whole cannot be taken: INVALID_ARGUMENT (reason
     * BATCH_TOO_LARGE) over 1000 writes or 2 MiB of values, or with no writes; or with the codes any
     * call may get (UNAUTHENTICATED, UNAVAILABLE, DEADLINE_EXCEEDED, ...). When the call fails with
     * UNAVAILABLE, DEADLINE_EXCEEDED or CANCELLED, each write may or may not have been applied, each
     * all or nothing: retry with the same idempotency keys to learn which.
     * Why a unary call and not a long-lived stream of writes: a unary call keeps every per-call property
     * that clients in every language already handle (a deadline, authentication, retries with
     * idempotency keys, load balancing over replicas, gRPC-Web and Connect, which have no bidirectional
     * streams), it needs no flow control or fairness of its own, and a broken connection fails only the
     * calls on it. Clients get the batching of a stream by sending, while one Batch is in flight, the
     * writes that arrive meanwhile in the next one; a lone write goes out as a plain Put at once.
     * A server that predates Batch answers UNIMPLEMENTED: send the writes one by one.
     * </pre>
     */
    public void batch(io.fencekeeper.v1.BatchRequest request,
        io.grpc.stub.StreamObserver<io.fencekeeper.v1.BatchResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getBatchMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service FencedStoreService.
   * <pre>
   * FencedStoreService is a key-value store that takes part in fencing.
   * Keys live in the namespace of a resource. Each resource has a fence: the greatest generation the
   * store has accepted for it. Every mutation carries a FencingToken; the check against the fence, the
   * write, the fence update and the idempotency record commit in one etcd transaction, or not at all.
   * A refused mutation changes nothing and fails with FAILED_PRECONDITION and a google.rpc.ErrorInfo
   * (reason STALE_TOKEN, LEASE_NOT_HELD or GENERATION_NOT_ISSUED; see ErrorReason).
   * Limits: keys 1 to 1024 bytes of UTF-8 without control characters; values up to 1 MiB; a Txn has a
   * server-configured maximum number of operations (64 by default) and at most 1 MiB of values in all.
   * </pre>
   */
  public static final class FencedStoreServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<FencedStoreServiceBlockingV2Stub> {
    private FencedStoreServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected FencedStoreServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new FencedStoreServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * Write one key under a token.
     * </pre>
     */
    public io.fencekeeper.v1.PutResponse put(io.fencekeeper.v1.PutRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getPutMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Read one key. Needs no token.
     * </pre>
     */
    public io.fencekeeper.v1.GetResponse get(io.fencekeeper.v1.GetRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Delete one key under a token. Deleting a missing key succeeds: afterwards the key is absent either way.
     * </pre>
     */
    public io.fencekeeper.v1.DeleteResponse delete(io.fencekeeper.v1.DeleteRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getDeleteMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Apply several puts and deletes under one token, all or nothing. A key may appear once.
     * </pre>
     */
    public io.fencekeeper.v1.TxnResponse txn(io.fencekeeper.v1.TxnRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getTxnMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * List the keys of a resource by prefix, in key order, one page at a time. All pages of one listing
     * read the same snapshot.
     * </pre>
     */
    public io.fencekeeper.v1.RangeResponse range(io.fencekeeper.v1.RangeRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getRangeMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Read a resource's fence: the greatest generation accepted. Needs no token.
     * </pre>
     */
    public io.fencekeeper.v1.GetFenceResponse getFence(io.fencekeeper.v1.GetFenceRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetFenceMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Apply many independent Puts and Deletes in one call, each exactly as if it had been sent alone:
     * each with its own resource, token, fence mode and idempotency key, each checked, authorized,
     * applied all or nothing and answered on its own (a Commit, or the status that Put or Delete would
     * have failed with, ErrorInfo included). One write's refusal does not touch the others; this is not
     * Txn, which stays the atomic form. The writes of a batch are concurrent, like as many calls sent
     * at once: two writes of one key in one batch may apply in either order. Send a write that must
     * follow another after the other's answer.
     * The call itself fails only when the batch as a whole cannot be taken: INVALID_ARGUMENT (reason
     * BATCH_TOO_LARGE) over 1000 writes or 2 MiB of values, or with no writes; or with the codes any
     * call may get (UNAUTHENTICATED, UNAVAILABLE, DEADLINE_EXCEEDED, ...). When the call fails with
     * UNAVAILABLE, DEADLINE_EXCEEDED or CANCELLED, each write may or may not have been applied, each
     * all or nothing: retry with the same idempotency keys to learn which.
     * Why a unary call and not a long-lived stream of writes: a unary call keeps every per-call property
     * that clients in every language already handle (a deadline, authentication, retries with
     * idempotency keys, load balancing over replicas, gRPC-Web and Connect, which have no bidirectional
     * streams), it needs no flow control or fairness of its own, and a broken connection fails only the
     * calls on it. Clients get the batching of a stream by sending, while one Batch is in flight, the
     * writes that arrive meanwhile in the next one; a lone write goes out as a plain Put at once.
     * A server that predates Batch answers UNIMPLEMENTED: send the writes one by one.
     * </pre>
     */
    public io.fencekeeper.v1.BatchResponse batch(io.fencekeeper.v1.BatchRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getBatchMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service FencedStoreService.
   * <pre>
   * FencedStoreService is a key-value store that takes part in fencing.
   * Keys live in the namespace of a resource. Each resource has a fence: the greatest generation the
   * store has accepted for it. Every mutation carries a FencingToken; the check against the fence, the
   * write, the fence update and the idempotency record commit in one etcd transaction, or not at all.
   * A refused mutation changes nothing and fails with FAILED_PRECONDITION and a google.rpc.ErrorInfo
   * (reason STALE_TOKEN, LEASE_NOT_HELD or GENERATION_NOT_ISSUED; see ErrorReason).
   * Limits: keys 1 to 1024 bytes of UTF-8 without control characters; values up to 1 MiB; a Txn has a
   * server-configured maximum number of operations (64 by default) and at most 1 MiB of values in all.
   * </pre>
   */
  public static final class FencedStoreServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<FencedStoreServiceBlockingStub> {
    private FencedStoreServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected FencedStoreServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new FencedStoreServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * Write one key under a token.
     * </pre>
     */
    public io.fencekeeper.v1.PutResponse put(io.fencekeeper.v1.PutRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getPutMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Read one key. Needs no token.
     * </pre>
     */
    public io.fencekeeper.v1.GetResponse get(io.fencekeeper.v1.GetRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Delete one key under a token. Deleting a missing key succeeds: afterwards the key is absent either way.
     * </pre>
     */
    public io.fencekeeper.v1.DeleteResponse delete(io.fencekeeper.v1.DeleteRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getDeleteMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Apply several puts and deletes under one token, all or nothing. A key may appear once.
     * </pre>
     */
    public io.fencekeeper.v1.TxnResponse txn(io.fencekeeper.v1.TxnRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getTxnMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * List the keys of a resource by prefix, in key order, one page at a time. All pages of one listing
     * read the same snapshot.
     * </pre>
     */
    public io.fencekeeper.v1.RangeResponse range(io.fencekeeper.v1.RangeRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getRangeMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Read a resource's fence: the greatest generation accepted. Needs no token.
     * </pre>
     */
    public io.fencekeeper.v1.GetFenceResponse getFence(io.fencekeeper.v1.GetFenceRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetFenceMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Apply many independent Puts and Deletes in one call, each exactly as if it had been sent alone:
     * each with its own resource, token, fence mode and idempotency key, each checked, authorized,
     * applied all or nothing and answered on its own (a Commit, or the status that Put or Delete would
     * have failed with, ErrorInfo included). One write's refusal does not touch the others; this is not
     * Txn, which stays the atomic form. The writes of a batch are concurrent, like as many calls sent
     * at once: two writes of one key in one batch may apply in either order. Send a write that must
     * follow another after the other's answer.
     * The call itself fails only when the batch as a whole cannot be taken: INVALID_ARGUMENT (reason
     * BATCH_TOO_LARGE) over 1000 writes or 2 MiB of values, or with no writes; or with the codes any
     * call may get (UNAUTHENTICATED, UNAVAILABLE, DEADLINE_EXCEEDED, ...). When the call fails with
     * UNAVAILABLE, DEADLINE_EXCEEDED or CANCELLED, each write may or may not have been applied, each
     * all or nothing: retry with the same idempotency keys to learn which.
     * Why a unary call and not a long-lived stream of writes: a unary call keeps every per-call property
     * that clients in every language already handle (a deadline, authentication, retries with
     * idempotency keys, load balancing over replicas, gRPC-Web and Connect, which have no bidirectional
     * streams), it needs no flow control or fairness of its own, and a broken connection fails only the
     * calls on it. Clients get the batching of a stream by sending, while one Batch is in flight, the
     * writes that arrive meanwhile in the next one; a lone write goes out as a plain Put at once.
     * A server that predates Batch answers UNIMPLEMENTED: send the writes one by one.
     * </pre>
     */
    public io.fencekeeper.v1.BatchResponse batch(io.fencekeeper.v1.BatchRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getBatchMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service FencedStoreService.
   * <pre>
   * FencedStoreService is a key-value store that takes part in fencing.
   * Keys live in the namespace of a resource. Each resource has a fence: the greatest generation the
   * store has accepted for it. Every mutation carries a FencingToken; the check against the fence, the
   * write, the fence update and the idempotency record commit in one etcd transaction, or not at all.
   * A refused mutation changes nothing and fails with FAILED_PRECONDITION and a google.rpc.ErrorInfo
   * (reason STALE_TOKEN, LEASE_NOT_HELD or GENERATION_NOT_ISSUED; see ErrorReason).
   * Limits: keys 1 to 1024 bytes of UTF-8 without control characters; values up to 1 MiB; a Txn has a
   * server-configured maximum number of operations (64 by default) and at most 1 MiB of values in all.
   * </pre>
   */
  public static final class FencedStoreServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<FencedStoreServiceFutureStub> {
    private FencedStoreServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected FencedStoreServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new FencedStoreServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * Write one key under a token.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.fencekeeper.v1.PutResponse> put(
        io.fencekeeper.v1.PutRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getPutMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Read one key. Needs no token.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.fencekeeper.v1.GetResponse> get(
        io.fencekeeper.v1.GetRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Delete one key under a token. Deleting a missing key succeeds: afterwards the key is absent either way.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.fencekeeper.v1.DeleteResponse> delete(
        io.fencekeeper.v1.DeleteRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getDeleteMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Apply several puts and deletes under one token, all or nothing. A key may appear once.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.fencekeeper.v1.TxnResponse> txn(
        io.fencekeeper.v1.TxnRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getTxnMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * List the keys of a resource by prefix, in key order, one page at a time. All pages of one listing
     * read the same snapshot.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.fencekeeper.v1.RangeResponse> range(
        io.fencekeeper.v1.RangeRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getRangeMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Read a resource's fence: the greatest generation accepted. Needs no token.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.fencekeeper.v1.GetFenceResponse> getFence(
        io.fencekeeper.v1.GetFenceRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetFenceMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Apply many independent Puts and Deletes in one call, each exactly as if it had been sent alone:
     * each with its own resource, token, fence mode and idempotency key, each checked, authorized,
     * applied all or nothing and answered on its own (a Commit, or the status that Put or Delete would
     * have failed with, ErrorInfo included). One write's refusal does not touch the others; this is not
     * Txn, which stays the atomic form. The writes of a batch are concurrent, like as many calls sent
     * at once: two writes of one key in one batch may apply in either order. Send a write that must
     * follow another after the other's answer.
     * The call itself fails only when the batch as a whole cannot be taken: INVALID_ARGUMENT (reason
     * BATCH_TOO_LARGE) over 1000 writes or 2 MiB of values, or with no writes; or with the codes any
     * call may get (UNAUTHENTICATED, UNAVAILABLE, DEADLINE_EXCEEDED, ...). When the call fails with
     * UNAVAILABLE, DEADLINE_EXCEEDED or CANCELLED, each write may or may not have been applied, each
     * all or nothing: retry with the same idempotency keys to learn which.
     * Why a unary call and not a long-lived stream of writes: a unary call keeps every per-call property
     * that clients in every language already handle (a deadline, authentication, retries with
     * idempotency keys, load balancing over replicas, gRPC-Web and Connect, which have no bidirectional
     * streams), it needs no flow control or fairness of its own, and a broken connection fails only the
     * calls on it. Clients get the batching of a stream by sending, while one Batch is in flight, the
     * writes that arrive meanwhile in the next one; a lone write goes out as a plain Put at once.
     * A server that predates Batch answers UNIMPLEMENTED: send the writes one by one.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.fencekeeper.v1.BatchResponse> batch(
        io.fencekeeper.v1.BatchRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getBatchMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_PUT = 0;
  private static final int METHODID_GET = 1;
  private static final int METHODID_DELETE = 2;
  private static final int METHODID_TXN = 3;
  private static final int METHODID_RANGE = 4;
  private static final int METHODID_GET_FENCE = 5;
  private static final int METHODID_BATCH = 6;

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
        case METHODID_PUT:
          serviceImpl.put((io.fencekeeper.v1.PutRequest) request,
              (io.grpc.stub.StreamObserver<io.fencekeeper.v1.PutResponse>) responseObserver);
          break;
        case METHODID_GET:
          serviceImpl.get((io.fencekeeper.v1.GetRequest) request,
              (io.grpc.stub.StreamObserver<io.fencekeeper.v1.GetResponse>) responseObserver);
          break;
        case METHODID_DELETE:
          serviceImpl.delete((io.fencekeeper.v1.DeleteRequest) request,
              (io.grpc.stub.StreamObserver<io.fencekeeper.v1.DeleteResponse>) responseObserver);
          break;
        case METHODID_TXN:
          serviceImpl.txn((io.fencekeeper.v1.TxnRequest) request,
              (io.grpc.stub.StreamObserver<io.fencekeeper.v1.TxnResponse>) responseObserver);
          break;
        case METHODID_RANGE:
          serviceImpl.range((io.fencekeeper.v1.RangeRequest) request,
              (io.grpc.stub.StreamObserver<io.fencekeeper.v1.RangeResponse>) responseObserver);
          break;
        case METHODID_GET_FENCE:
          serviceImpl.getFence((io.fencekeeper.v1.GetFenceRequest) request,
              (io.grpc.stub.StreamObserver<io.fencekeeper.v1.GetFenceResponse>) responseObserver);
          break;
        case METHODID_BATCH:
          serviceImpl.batch((io.fencekeeper.v1.BatchRequest) request,
              (io.grpc.stub.StreamObserver<io.fencekeeper.v1.BatchResponse>) responseObserver);
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
        default:
          throw new AssertionError();
      }
    }
  }

  public static final io.grpc.ServerServiceDefinition bindService(AsyncService service) {
    return io.grpc.ServerServiceDefinition.builder(getServiceDescriptor())
        .addMethod(
          getPutMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.fencekeeper.v1.PutRequest,
              io.fencekeeper.v1.PutResponse>(
                service, METHODID_PUT)))
        .addMethod(
          getGetMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.fencekeeper.v1.GetRequest,
              io.fencekeeper.v1.GetResponse>(
                service, METHODID_GET)))
        .addMethod(
          getDeleteMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.fencekeeper.v1.DeleteRequest,
              io.fencekeeper.v1.DeleteResponse>(
                service, METHODID_DELETE)))
        .addMethod(
          getTxnMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.fencekeeper.v1.TxnRequest,
              io.fencekeeper.v1.TxnResponse>(
                service, METHODID_TXN)))
        .addMethod(
          getRangeMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.fencekeeper.v1.RangeRequest,
              io.fencekeeper.v1.RangeResponse>(
                service, METHODID_RANGE)))
        .addMethod(
          getGetFenceMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.fencekeeper.v1.GetFenceRequest,
              io.fencekeeper.v1.GetFenceResponse>(
                service, METHODID_GET_FENCE)))
        .addMethod(
          getBatchMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.fencekeeper.v1.BatchRequest,
              io.fencekeeper.v1.BatchResponse>(
                service, METHODID_BATCH)))
        .build();
  }

  private static abstract class FencedStoreServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    FencedStoreServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return io.fencekeeper.v1.StoreProto.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("FencedStoreService");
    }
  }

  private static final class FencedStoreServiceFileDescriptorSupplier
      extends FencedStoreServiceBaseDescriptorSupplier {
    FencedStoreServiceFileDescriptorSupplier() {}
  }

  private static final class FencedStoreServiceMethodDescriptorSupplier
      extends FencedStoreServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    FencedStoreServiceMethodDescriptorSupplier(java.lang.String methodName) {
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
      synchronized (FencedStoreServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new FencedStoreServiceFileDescriptorSupplier())
              .addMethod(getPutMethod())
              .addMethod(getGetMethod())
              .addMethod(getDeleteMethod())
              .addMethod(getTxnMethod())
              .addMethod(getRangeMethod())
              .addMethod(getGetFenceMethod())
              .addMethod(getBatchMethod())
              .build();
        }
      }
    }
    return result;
  }
}
