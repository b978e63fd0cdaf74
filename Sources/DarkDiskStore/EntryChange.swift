/// Something a mount shows changed, in any process: a node (its outline entry, or one of its stored files
/// appeared, went, moved between pools or was replaced) or a user's avatar. Read from the index's change
/// table (`DiskManager.entryChanges(after:)`), which triggers fill inside each writing transaction, so a
/// mount learns *which* entries to tell the kernel about at a cost that grows with the changes, not with
/// the store.
package enum EntryChange: Sendable, Hashable {
    case node(NodeID)
    case avatar(UserID, IdentityID)
}
