//! The one error type of the codec.

/// Why bytes could not be read as what they were meant to be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// A message ended inside a field.
    #[error("message truncated")]
    Truncated,
    /// A varint longer than ten bytes.
    #[error("malformed varint")]
    BadVarint,
    /// A wire type protobuf does not define (3 and 4, the deprecated
    /// groups, included: etcd never sends them).
    #[error("unsupported wire type {0}")]
    BadWireType(u8),
    /// A known field came with another wire type than its declaration's.
    #[error("{message}.{field} has the wrong wire type")]
    WrongType {
        /// The message being read.
        message: &'static str,
        /// The field number.
        field: u32,
    },
    /// A string field that is not UTF-8.
    #[error("{0} is not UTF-8")]
    BadUtf8(&'static str),
    /// A gRPC message with the compressed flag set: loadrig asks for none.
    #[error("compressed gRPC message (flag {0})")]
    Compressed(u8),
    /// A gRPC message longer than [`crate::etcd::frame::MAX_MESSAGE`].
    #[error("gRPC message of {0} bytes is over the limit")]
    TooLong(u64),
    /// A message too long for a gRPC length prefix.
    #[error("message too long to frame")]
    Unframeable,
}
