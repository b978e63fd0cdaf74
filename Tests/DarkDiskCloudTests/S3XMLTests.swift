@testable import DarkDiskCloud
@testable import DarkDiskRemote
import Foundation
import Testing

/// The S3 answer parser: what real servers send parses; everything outside the subset is nil.
@Suite struct S3XMLTests {
    func parse(_ text: String) -> S3XML? { S3XML.parse(Data(text.utf8)) }

    @Test func aListingAsS3SendsIt() throws {
        let listing = """
            <?xml version="1.0" encoding="UTF-8"?>
            <ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
              <Name>bucket</Name><Prefix>nodes/</Prefix><KeyCount>2</KeyCount>
              <IsTruncated>true</IsTruncated><NextContinuationToken>1/a+b=</NextContinuationToken>
              <Contents><Key>nodes/a&amp;b.ddc</Key><ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag><Size>1024</Size></Contents>
              <Contents><Key>nodes/caf&#233;&#x2764;.ddc</Key><ETag>"x"</ETag><Size>7</Size><Owner/></Contents>
            </ListBucketResult>
            """
        let document = try #require(parse(listing))
        #expect(document.name == "ListBucketResult")
        #expect(document.text("IsTruncated") == "true" && document.text("NextContinuationToken") == "1/a+b=")
        let contents = document.children("Contents")
        #expect(contents.map { $0.text("Key") } == ["nodes/a&b.ddc", "nodes/café❤.ddc"])
        #expect(contents.map { $0.text("ETag") } == ["\"9b2cf535f27731c974343645a3985328\"", "\"x\""])
        #expect(contents[1].child("Owner")?.text == "", "an empty element")
    }

    @Test func errorsAndUploadIDs() throws {
        let error = try #require(parse("<Error><Code>NoSuchKey</Code><Message>The key &lt;x&gt; does not exist</Message></Error>"))
        #expect(error.name == "Error" && error.text("Code") == "NoSuchKey" && error.text("Message") == "The key <x> does not exist")
        let upload = try #require(parse("<?xml version='1.0'?>\r\n<InitiateMultipartUploadResult a='1' b=\"2\"><UploadId>u-1</UploadId></InitiateMultipartUploadResult>\n"))
        #expect(upload.text("UploadId") == "u-1")
        #expect(parse("\u{FEFF}<A>x</A>")?.text == "x", "a byte order mark")
        // A slow CompleteMultipartUpload: whitespace sent to keep the connection open, then the answer.
        let completed = parse("\n \r\n<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CompleteMultipartUploadResult><ETag>\"e-2\"</ETag></CompleteMultipartUploadResult>")
        #expect(completed?.name == "CompleteMultipartUploadResult" && completed?.text("ETag") == "\"e-2\"")
    }

    @Test(arguments: [
        "", "   ", "not xml at all", "<A>", "</A>", "<A></B>", "<A><B></A></B>", "<A/><B/>", "<A></A>trailing",
        "text<A/>", "<A>&nbsp;</A>", "<A>&#0;</A>", "<A>&#xD800;</A>", "<A>&#xFFFE;</A>", "<A>&amp</A>", "<A>&#;</A>",
        "<A>\u{1}</A>", "<A>\u{0}</A>", "<!DOCTYPE A [<!ENTITY x \"y\">]><A>&x;</A>", "<A><!-- note --></A>",
        "<A><![CDATA[x]]></A>", "<A><?pi data?></A>", "<?x?><A/>", "<?xml?><A/>", "<A/><?xml version='1.0'?>",
        "<A b></A>", "<A b=c></A>", "<A b='<'></A>", "<A b='x></A>", "<A b='1'c='2'></A>", "<1A></1A>", "<-A/>",
        "< A></A>", "<A></ A>", "<A><</A>", "<A>x</A", "<?xml version='1.0'",
    ])
    func malformedDocumentsAreNil(_ text: String) {
        #expect(parse(text) == nil, "\(text.debugDescription) parsed")
    }

    @Test func deepNestingAndOtherEncodingsAreRefused() {
        let deep = String(repeating: "<A>", count: S3XML.maxDepth) + String(repeating: "</A>", count: S3XML.maxDepth)
        #expect(parse(deep) != nil, "\(S3XML.maxDepth) levels")
        let deeper = String(repeating: "<A>", count: S3XML.maxDepth + 1) + String(repeating: "</A>", count: S3XML.maxDepth + 1)
        #expect(parse(deeper) == nil)
        #expect(S3XML.parse(Data([0x3C, 0x41, 0xFF, 0x3E, 0x3C, 0x2F, 0x41, 0xFF, 0x3E])) == nil, "an element name that is not UTF-8")
        #expect(S3XML.parse(Data("<A>x</A>".utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })) == nil, "UTF-16")
        // A million opening tags: refused at the depth limit, without recursion.
        #expect(parse(String(repeating: "<A>", count: 1_000_000)) == nil)
    }
}
