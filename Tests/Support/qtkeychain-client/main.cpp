// A small client of QtKeychain (libqt5keychain1), for the adoption tests: it stores and reads
// passwords exactly as an application using QtKeychain does.
//
//   qtkeychain-client write SERVICE KEY TEXT      (a password: QtKeychain stores it as text)
//   qtkeychain-client write-binary SERVICE KEY HEX (binary data: QtKeychain stores it as base64)
//   qtkeychain-client read SERVICE KEY            (prints the text, or the data as hex)
//
// Exit codes: 0 done, 1 QtKeychain reported an error (printed on stderr), 2 usage.
#include <QCoreApplication>
#include <QEventLoop>
#include <QTextStream>
#include <qt5keychain/keychain.h>

static int finish(QKeychain::Job &job)
{
    QEventLoop loop;
    QObject::connect(&job, &QKeychain::Job::finished, &loop, &QEventLoop::quit);
    job.start();
    loop.exec();
    if (job.error() != QKeychain::NoError) {
        QTextStream(stderr) << "qtkeychain-client: " << job.errorString() << "\n";
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    const QStringList args = app.arguments();
    if (args.size() == 5 && (args[1] == "write" || args[1] == "write-binary")) {
        QKeychain::WritePasswordJob job(args[2]);
        job.setAutoDelete(false);
        job.setKey(args[3]);
        if (args[1] == "write")
            job.setTextData(args[4]);
        else
            job.setBinaryData(QByteArray::fromHex(args[4].toLatin1()));
        return finish(job);
    }
    if (args.size() == 4 && args[1] == "read") {
        QKeychain::ReadPasswordJob job(args[2]);
        job.setAutoDelete(false);
        job.setKey(args[3]);
        const int status = finish(job);
        if (status == 0)
            QTextStream(stdout) << job.textData() << "\n" << job.binaryData().toHex() << "\n";
        return status;
    }
    QTextStream(stderr) << "usage: qtkeychain-client write|write-binary SERVICE KEY VALUE, or read SERVICE KEY\n";
    return 2;
}
