/// A closure kept where threads share it: in `Locked`, store a `Callback`, never the closure itself.
///
/// `Locked.withLock` passes its value `inout`, and once the compiler specializes it for a function type, it
/// converts the closure from the generic value's representation to its own and back at every call: each
/// `withLock { $0 }` wraps the stored closure in two more reabstraction thunks, for good. A closure read
/// once per file closed thus became a chain of thousands of thunks that every call walked (a quarter of the
/// mount daemon's CPU in a `tar x`). A struct's field keeps one representation wherever the struct goes, so a
/// `Callback` crosses the lock unchanged. `Scripts/test` refuses a `Locked` of a bare function type.
package struct Callback<Input, Output>: Sendable {
    package let call: @Sendable (Input) -> Output

    package init(_ call: @escaping @Sendable (Input) -> Output) {
        self.call = call
    }
}
